"""RAC272: a declared tensor transport moves tensors as far as it says it reaches, run without Ray.

A transport's ``reach`` tells path selection whether to offer it between two nodes; Ray's own
``TensorTransportManager`` has no such capability, so a wrong declaration shows only when a transfer between nodes
fails in a user's job. RAC311 moves tensors between two Ray nodes, at the certified tier; here the transport's own
steps run between processes that are one node, then two (:mod:`rayaccel_conformance.harness.node_pair`), in one
fresh interpreter.
"""

from __future__ import annotations

from rayaccel.records import TransportSpec
from rayaccel_conformance.harness.node_pair import NODE_LOCAL_DIRS, PairResult, Receipt, transfer_pair
from rayaccel_conformance.harness.subject import Subject
from rayaccel_conformance.registry import CheckFailed, CheckSkipped, Evidence, check

INVARIANT = "invariant declared-reach-is-reached"
_OTHER_NODE = f"another node ({', '.join(NODE_LOCAL_DIRS)} and process ids of its own)"


@check("RAC272")
def transport_reach(subject: Subject) -> Evidence:
    """Every declared tensor transport moves tensors between the processes its reach says, outside Ray.

    For each ``rayaccel_transports`` record of the plugin's own (not ``builtin_in_ray``) that can run on this
    machine (one-sided, CPU tensors, torch installed: what RAC301 runs), one fresh interpreter runs the
    transport's own steps: a sender extracts RAC301's payload (``extract_tensor_transport_metadata``), the
    metadata goes pickled to a receiver on the sender's node, which must receive the bytes identical
    (``recv_multiple_tensors``); and, where the declaration says ``reach="cluster"`` (the default), to a
    receiver on another node: a process with its own ``/dev/shm``, ``/tmp``, ``/var/tmp`` and process ids
    (mount, pid and user namespaces, as two pods are two nodes), the network and other files shared. A
    transport declared for the whole cluster whose bytes reach only its own node's processes fails naming
    ``invariant declared-reach-is-reached``, the transport and what the other node's receive raised: path
    selection would offer it between nodes, where every transfer fails (RAC311 finds it between two Ray nodes,
    at the certified tier). A machine that gives a process no namespaces of its own skips the check with
    the reason. Fix: declare ``reach="node"`` for a transport that moves bytes through a node's shared
    memory, its files or its process ids (the template's ``transport.py`` shows it); a transport meant for
    the cluster must find its sender by a path another node reaches.
    """
    from rayaccel.inventory.transport_paths import reaches_other_nodes
    from rayaccel_conformance.checks.transport_contract import own_transports_to_run

    runnable, not_run = own_transports_to_run(subject)
    said: list[str] = []
    wrong: list[str] = []
    cannot: list[str] = []
    for spec in runnable:
        across = reaches_other_nodes(spec)
        try:
            pair = transfer_pair(spec.manager_class, other_node=across)
        except RuntimeError as e:
            wrong.append(f"{spec.name}: {e}")
            continue
        finding = _finding(spec, pair)
        if finding is None:
            said.append(_passed(spec, pair))
        elif pair.other_node is not None and pair.other_node.cannot:
            cannot.append(f"{spec.name}: {pair.other_node.cannot}")
        else:
            wrong.append(finding)
    if wrong:
        raise CheckFailed(wrong)
    if cannot:
        raise CheckSkipped("; ".join(cannot) + ": a receive on another node was not tried")
    return [*said, *not_run]


def _got(receipt: Receipt, sent: list[str]) -> str | None:
    """What is wrong with a receipt (None: the bytes arrived identical)."""
    if receipt.cannot:
        return receipt.cannot
    if receipt.raised:
        return f"the receive raised {receipt.raised}"
    got = receipt.digests or []
    if got != sent:
        bad = [i for i, (a, b) in enumerate(zip(got, sent, strict=False)) if a != b] or "count"
        return f"tensors {bad} arrived with other bytes"
    return None


def _finding(spec: TransportSpec, pair: PairResult) -> str | None:
    within = _got(pair.same_node, pair.sent)
    if within is not None:
        return (f"{spec.name}: between two processes of one node {within} (a one-sided transport's receiver, "
                "given the sender's metadata, reads its tensors; RAC301 runs the same steps in Ray)")
    if pair.other_node is None:
        return None
    if pair.other_node.cannot:
        return f"{spec.name}: {pair.other_node.cannot}"
    across = _got(pair.other_node, pair.sent)
    if across is None:
        return None
    return (f"{INVARIANT}: {spec.name} is declared reach='cluster'{_default(spec)} but moves tensors within one "
            f"node only: to a receiver on the sender's node the {len(pair.sent)} tensors arrive identical; to "
            f"a receiver on {_OTHER_NODE} {across}. Path selection offers it between nodes, where this is every "
            "transfer: declare reach='node', or reach the sender by a path another node has")


def _default(spec: TransportSpec) -> str:
    return "" if "reach" in spec.model_fields_set else " (TransportSpec's default)"


def _passed(spec: TransportSpec, pair: PairResult) -> str:
    n = len(pair.sent)
    if pair.other_node is None:
        return (f"{spec.name} (reach 'node'): {n} tensors arrive identical between two processes of one node; "
                "never offered between nodes")
    return (f"{spec.name} (reach 'cluster'): {n} tensors arrive identical on the sender's node and on "
            f"{_OTHER_NODE}")
