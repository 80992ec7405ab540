"""The connected cluster's live nodes, read from the GCS again only when Ray's node channel says they changed.

``ray.nodes()`` is a GCS round trip: 0.1-0.3 ms of the driver's CPU here, a tenth of what creating and placing a
placement group costs. The GCS publishes every node that registers or dies on its node-info channel
(``GCS_NODE_INFO_CHANNEL``, the one Ray's dashboard follows); one daemon thread per cluster long-polls it and
moves a counter at each message. :func:`alive_nodes` returns the nodes of its last read while the counter has
not moved since then (taken before that read, so a change during it counts), and reads again otherwise. A node
that registered less than the channel's delivery time ago (under a millisecond on one host) may be missing, as
from a read made just before it registered. Where nothing can follow the channel (Ray Client, a subscription the
GCS refused) or the thread has stopped (the GCS went away), every call reads; a forked child follows on its own
thread. :func:`close_all` (``rayaccel.ray.shutdown`` calls it) stops following before a local GCS goes.
"""

from __future__ import annotations

import atexit
import importlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger("rayaccel.ray.node_view")

#: Seconds one long poll of the node channel may wait for a message before it is asked again.
POLL_TIMEOUT_S = 60.0
#: Seconds the subscription itself may take (one GCS round trip, once per cluster and process).
SUBSCRIBE_TIMEOUT_S = 10.0


@dataclass
class _Watch:
    """One cluster's node channel as this process follows it."""

    pid: int
    #: Moves at every node message, at a GCS restart and when following stops.
    epoch: int = 0
    following: bool = False
    #: (the epoch before the read, the live nodes it gave)
    view: tuple[int, list[dict[str, Any]]] | None = None
    close: Callable[[], None] = field(default=lambda: None)


_lock = threading.Lock()
_watches: dict[tuple[str, str], _Watch] = {}
#: The GCS client :func:`_watch` last answered for and its watch: the same client is the same cluster, so its
#: key (two properties of the client, most of a call's CPU) is not built again; [] after :func:`close_all`.
_last: list[tuple[object, _Watch]] = []


def _read() -> list[dict[str, Any]]:
    import ray

    list_nodes: Callable[[], list[dict[str, Any]]] = ray.nodes
    return [n for n in list_nodes() if n.get("Alive")]


def alive_nodes() -> list[dict[str, Any]]:
    """``ray.nodes()``'s alive nodes (draining ones too), as of the last change the GCS announced. The dicts are
    shared between calls: read them, do not change them."""
    return alive_nodes_versioned()[0]


def alive_nodes_versioned() -> tuple[list[dict[str, Any]], object | None]:
    """:func:`alive_nodes` and its version: one object, the same (``is``) for as long as these nodes stand, so a
    caller may keep what it derived from them beside it; None where every call reads (nothing to keep)."""
    watch = _watch()
    if watch is None:
        return _read(), None
    epoch = watch.epoch
    view = watch.view
    if watch.following and view is not None and view[0] == epoch:
        return list(view[1]), view[1]
    nodes = _read()
    if watch.following:
        watch.view = (epoch, nodes)
        return list(nodes), nodes
    return nodes, None


def _watch() -> _Watch | None:
    """This process's watch of the connected cluster's node channel, started on first use; None without one."""
    import ray

    client = getattr(ray._private.worker.global_worker, "gcs_client", None)
    if client is None:  # not connected, or Ray Client
        return None
    last = next(iter(_last), None)  # close_all may empty it meanwhile
    if last is not None and last[0] is client and last[1].following and last[1].pid == os.getpid():
        return last[1]
    key = (str(client.address), str(client.cluster_id))
    watch = _watches.get(key)
    if watch is None or watch.pid != os.getpid():
        with _lock:
            watch = _watches.get(key)
            if watch is None or watch.pid != os.getpid():  # in a forked child the thread is the parent's
                watch = _watches[key] = _Watch(pid=os.getpid())
                _follow(watch, key[0])
    _last[:] = [(client, watch)]
    return watch


def _follow(watch: _Watch, address: str) -> None:
    """Subscribe to the node channel (before the first read, so no change after that read is missed) and start
    the thread that follows it; on any failure the watch stays unfollowed and every call reads."""
    try:
        import grpc
        from ray._private.gcs_utils import create_gcs_channel
        gcs_service_pb2: Any = importlib.import_module("ray.core.generated.gcs_service_pb2")  # generated: no stubs
        gcs_service_pb2_grpc: Any = importlib.import_module("ray.core.generated.gcs_service_pb2_grpc")
        pubsub_pb2: Any = importlib.import_module("ray.core.generated.pubsub_pb2")

        channel = create_gcs_channel(address)
        stub = gcs_service_pb2_grpc.ControlPlanePubSubGcsServiceStub(channel)
        subscriber_id = os.urandom(28)  # a SubscriberID: kUniqueIDSize random bytes

        def subscribe() -> None:
            stub.GcsSubscriberCommandBatch(gcs_service_pb2.GcsSubscriberCommandBatchRequest(
                subscriber_id=subscriber_id, commands=[pubsub_pb2.Command(
                    channel_type=pubsub_pb2.GCS_NODE_INFO_CHANNEL, subscribe_message={})]),
                timeout=SUBSCRIBE_TIMEOUT_S)

        subscribe()
    except Exception as e:  # any failure here costs only the cache
        logger.debug("rayaccel: not following the GCS node channel at %s (%s); reading ray.nodes() each time",
                     address, e)
        return

    def poll() -> None:
        publisher, sequence = b"", 0
        while True:
            try:
                reply = stub.GcsSubscriberPoll(gcs_service_pb2.GcsSubscriberPollRequest(
                    subscriber_id=subscriber_id, max_processed_sequence_id=sequence, publisher_id=publisher),
                    timeout=POLL_TIMEOUT_S)
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                    break
                # A quiet minute. The GCS forgets a subscriber that has not polled for a while (a process
                # stopped, say): subscribe again, and count what went unannounced meanwhile as a change.
                try:
                    subscribe()
                except grpc.RpcError:
                    break
                watch.epoch += 1
                continue
            if reply.publisher_id != publisher:  # the first reply, or a restarted GCS: anything may have changed
                publisher, sequence = reply.publisher_id, 0
                watch.epoch += 1
            for message in reply.pub_messages:
                if message.sequence_id > sequence:
                    sequence = message.sequence_id
                    watch.epoch += 1
        watch.following = False
        watch.epoch += 1

    watch.close = channel.close
    watch.following = True
    threading.Thread(target=poll, name="rayaccel-node-view", daemon=True).start()


@atexit.register
def close_all() -> None:
    """Stop following every cluster's node channel (the next call subscribes again): before the cluster goes
    (gRPC logs a GOAWAY from a GCS that dies under a long poll), and before the interpreter goes."""
    with _lock:
        watches = list(_watches.values())
        _watches.clear()
        _last.clear()
    for watch in watches:
        watch.following = False
        if watch.pid == os.getpid():
            watch.close()
