"""Metrics and clear failures for every tensor transport the bridge registers, with no code from its vendor.

``rayaccel.ray.register_transports`` registers each plugin's ``TensorTransportManager`` class (and the SDK's
reference one) with Ray Direct Transport as :func:`measured` of it: a subclass whose transfer methods call the
plugin's and, around them, record through ``ray.util.metrics`` (so the node's metrics endpoint serves them):

- ``rayaccel_transport_transfers_total`` and ``rayaccel_transport_bytes_total`` (the tensors' bytes), per
  ``transport`` and ``direction``: ``recv`` counts each completed receive; ``send`` each completed
  ``send_multiple_tensors`` of a two-sided transport, or each ``extract_tensor_transport_metadata`` of a
  one-sided one (where the sender's part ends);
- ``rayaccel_transport_latency_seconds``, a histogram of those calls' durations, same tags;
- ``rayaccel_transport_failures_total`` per ``transport``, ``direction`` and ``step``: the method that failed
  (``extract``, ``send``, ``recv``, ``abort``, ``garbage_collect``), or the finer step a :class:`TransportError`
  names (``recv: open segment``). An abort is counted as a failed receive.

Whatever a plugin's transfer raises reaches the caller as one :class:`TransportError` naming the transport,
the direction, the step and this actor, with the plugin's exception as its cause (an error that is one already
passes unchanged). Metrics and errors name the transport as registered (``RCCL``, even where its class answers
``tensor_transport_backend()`` with the collective backend it uses). The subclass is importable by name from this
module (``Measured_<hex of NAME=module:Class>``), so Ray ships it to the actors by reference like the plugin's own
class.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, NoReturn

from rayaccel.support.lazy import import_object

logger = logging.getLogger(__name__)

TRANSFERS = "rayaccel_transport_transfers_total"
BYTES = "rayaccel_transport_bytes_total"
FAILURES = "rayaccel_transport_failures_total"
LATENCY = "rayaccel_transport_latency_seconds"
#: The latency histogram's bucket bounds, in seconds.
LATENCY_BOUNDS = (0.001, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)
_PREFIX = "Measured_"


class TransportError(RuntimeError):
    """A transfer failed: the message names the transport, the actors and the step (``step``)."""

    def __init__(self, message: str, step: str = "") -> None:
        super().__init__(message)
        self.step = step


class TransportMetrics:
    """The four series, created on first use in a Ray worker (a no-op elsewhere: outside Ray there is no
    endpoint to serve them)."""

    def __init__(self) -> None:
        self._made = False
        self._lock = threading.Lock()
        self.bytes: Any = None
        self.transfers: Any = None
        self.failures: Any = None
        self.latency: Any = None

    def _make(self) -> bool:
        with self._lock:
            if not self._made:
                self._made = True
                try:
                    from ray.util.metrics import Counter, Histogram

                    keys = ("transport", "direction")
                    self.bytes = Counter(BYTES, "Bytes of the tensors a tensor transport moved", tag_keys=keys)
                    self.transfers = Counter(TRANSFERS, "Tensor transfers completed", tag_keys=keys)
                    self.failures = Counter(FAILURES, "Tensor transfers that failed, by step",
                                            tag_keys=(*keys, "step"))
                    self.latency = Histogram(LATENCY, "Seconds per tensor transfer call",
                                             boundaries=list(LATENCY_BOUNDS), tag_keys=keys)
                except Exception:  # not in a Ray process: metrics are best effort
                    logger.debug("transport metrics unavailable", exc_info=True)
        return self.bytes is not None

    def ok(self, transport: str, direction: str, nbytes: int, seconds: float) -> None:
        if self._make():
            tags = {"transport": transport, "direction": direction}
            self.bytes.inc(nbytes, tags=tags)
            self.transfers.inc(1, tags=tags)
            self.latency.observe(seconds, tags=tags)

    def failed(self, transport: str, direction: str, step: str) -> None:
        if self._make():
            self.failures.inc(1, tags={"transport": transport, "direction": direction, "step": step})


METRICS = TransportMetrics()


def tensor_bytes(tensors: Any) -> int:
    """The bytes of a list of tensors (anything with ``nbytes``, or ``numel()`` and ``element_size()``)."""
    total = 0
    for t in tensors or ():
        n = getattr(t, "nbytes", None)
        if not isinstance(n, int):
            try:
                n = int(t.numel()) * int(t.element_size())
            except Exception:
                n = 0
        total += n
    return total


def _here() -> str:
    try:
        import ray

        if ray.is_initialized():  # get_runtime_context() would connect to a cluster left on the machine
            return ray.get_runtime_context().get_actor_id() or "driver"
    except Exception:
        pass
    return "?"


_made: dict[tuple[type, str], type] = {}
_made_lock = threading.Lock()


def class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def measured(cls: type, transport: str) -> type:
    """The measuring subclass of a ``TensorTransportManager`` class registered as ``transport`` (one per pair:
    registering twice finds the same). A class that measures already is returned as it is."""
    if getattr(cls, "rayaccel_measures", None) is not None:
        return cls
    with _made_lock:
        made = _made.get((cls, transport))
        if made is None:
            made = _make_measured(cls, transport)
            _made[(cls, transport)] = made
        return made


def measured_class(cls: type) -> type:
    """The plugin's class a measuring subclass wraps (the class itself otherwise)."""
    inner = getattr(cls, "rayaccel_measures", None)
    return inner if isinstance(inner, type) else cls


def _make_measured(plugin_class: type, transport: str) -> type:
    cls: Any = plugin_class  # a TensorTransportManager subclass (Ray's types are not checked here)

    def fail(direction: str, step: str, e: Exception) -> NoReturn:
        """Count the failure and raise one clear error (``e`` itself where it is one already)."""
        if isinstance(e, TransportError):
            METRICS.failed(transport, direction, e.step or step)
            raise e
        METRICS.failed(transport, direction, step)
        side = "receiver" if direction == "recv" else "sender"
        raise TransportError(f"{transport} transfer failed at step '{step}' ({side} actor {_here()}): "
                             f"{type(e).__name__}: {e}", step=step) from e

    def extract_tensor_transport_metadata(self: Any, obj_id: str, rdt_object: list[Any]) -> Any:
        start = time.monotonic()
        try:
            meta = cls.extract_tensor_transport_metadata(self, obj_id, rdt_object)
        except Exception as e:
            fail("send", "extract", e)
        if self.is_one_sided():
            METRICS.ok(transport, "send", tensor_bytes(rdt_object), time.monotonic() - start)
        return meta

    def send_multiple_tensors(self: Any, tensors: list[Any], tensor_transport_metadata: Any,
                              communicator_metadata: Any) -> None:
        start = time.monotonic()
        try:
            cls.send_multiple_tensors(self, tensors, tensor_transport_metadata, communicator_metadata)
        except Exception as e:
            fail("send", "send", e)
        METRICS.ok(transport, "send", tensor_bytes(tensors), time.monotonic() - start)

    def recv_multiple_tensors(self: Any, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        start = time.monotonic()
        try:
            out: list[Any] = cls.recv_multiple_tensors(self, obj_id, tensor_transport_metadata,
                                                       communicator_metadata, target_buffers)
        except Exception as e:
            fail("recv", "recv", e)
        METRICS.ok(transport, "recv", tensor_bytes(out), time.monotonic() - start)
        return out

    def abort_transport(self: Any, obj_id: str, communicator_metadata: Any) -> None:
        METRICS.failed(transport, "recv", "abort")
        try:
            cls.abort_transport(self, obj_id, communicator_metadata)
        except Exception as e:
            fail("recv", "abort", e)

    def garbage_collect(self: Any, obj_id: str, tensor_transport_meta: Any, tensors: list[Any]) -> None:
        try:
            cls.garbage_collect(self, obj_id, tensor_transport_meta, tensors)
        except Exception as e:
            fail("send", "garbage_collect", e)

    qualname = _PREFIX + f"{transport}={class_path(cls)}".encode().hex()
    made = type(f"Measured{cls.__name__}", (cls,), {
        "__module__": __name__, "__qualname__": qualname, "__doc__": f"{class_path(cls)}, measured.",
        "rayaccel_measures": cls,
        "extract_tensor_transport_metadata": extract_tensor_transport_metadata,
        "send_multiple_tensors": send_multiple_tensors, "recv_multiple_tensors": recv_multiple_tensors,
        "abort_transport": abort_transport, "garbage_collect": garbage_collect})
    return made


def make_rdt_manager_now() -> None:
    """Make this process's Ray Direct Transport manager now, while one thread alone asks for it.

    Ray 2.60 makes a worker's manager on first use (``ray._private.worker.Worker.rdt_manager``: ``if
    self._rdt_manager is None: self._rdt_manager = RDTManager()``, no lock). On an actor receiving its first
    RDT object two threads ask at once: the ``_ray_system`` thread running ``__ray_recv__`` and the main thread
    deserializing the task's argument. A thread descheduled between the check and the assignment (nice 15 under
    load) lets each make its own: the received tensors go into one manager's store while the task waits on the
    other's until Ray's RDT timeout (``not found in RDT object store after 60.0s``). Ray registers the custom
    transports on every actor (a ``_ray_system`` task whose argument is this module's classes) before it sends the
    actor any RDT task, so this is called from there: the manager exists before either thread asks."""
    try:
        from ray._private.worker import global_worker

        global_worker.rdt_manager  # noqa: B018  (the property makes it)
    except Exception:  # not in a Ray worker, or another Ray: its own lazy creation stands
        logger.debug("the RDT manager could not be made ahead of use", exc_info=True)


def __getattr__(name: str) -> type:
    """``Measured_<hex>``: the measuring subclass for the hex of ``NAME=module:Class`` (how an actor unpickles
    the class the driver registered, in Ray's registration of the transports on that actor: the manager Ray makes
    lazily is made here, see :func:`make_rdt_manager_now`)."""
    if not name.startswith(_PREFIX):
        raise AttributeError(name)
    try:
        transport, _, path = bytes.fromhex(name[len(_PREFIX):]).decode().partition("=")
    except ValueError:
        raise AttributeError(name) from None
    make_rdt_manager_now()
    return measured(import_object(path), transport)
