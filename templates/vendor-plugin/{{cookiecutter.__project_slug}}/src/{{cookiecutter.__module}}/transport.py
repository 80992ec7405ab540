"""A tensor transport for Ray Direct Transport, started from rayaccel's reference transport.

``rayaccel.SharedMemoryTransport`` is a complete, tested ``TensorTransportManager``: one-sided
shared memory for CPU tensors between actors on one node (tensor metadata on the sender, a copy-on-write receive
or a receive into Ray's target buffers, garbage collection when Ray frees the ref, abort, errors naming the step
and the actors). Metrics need no code of yours: the bridge registers your class measured
(``rayaccel.transports.metrics``: transfers, bytes, latency per direction, failures by step, on the node's
metrics endpoint), and whatever it raises reaches the caller as one error naming the transport and the step. Its
``SegmentPool`` shows the pattern that keeps a transfer near copy speed: reuse memory that is already allocated
and mapped (a bounded pool, returned when Ray frees the ref), and reuse it only when no receiver still maps it;
and its metadata step returns before the copy ends (the copy overlaps Ray's delivery of the metadata and the
receiver's mapping of the pages; the receiver waits, bounded, for the copy's lock). As shipped, this class is
that transport under your family's name. To move your device's memory, override the steps with your runtime's
calls (register the memory in ``extract_tensor_transport_metadata``, ideally from a pool of registered buffers,
read it in ``recv_multiple_tensors``, release it in ``garbage_collect``, stop a read in ``abort_transport``),
keep the rest, and declare it in ``plugin.py``::

    @hookimpl
    def rayaccel_transports() -> list[TransportSpec]:
        return [TransportSpec(name=transport.NAME, devices=["cpu"], link_kinds=["pcie"], one_sided=True,
                              reach="node", manager_class="{{ cookiecutter.__module }}.transport:Transport")]

``reach="node"``: shared memory is one machine's, so it is never offered between two nodes and the certified
tier's RAC311 (two nodes) skips it; once your transport moves tensors between nodes, drop it (the default is
``"cluster"``). Declared for the cluster, it is received on another node by the supported tier's RAC272 (that
node's own /dev/shm, /tmp and process ids): this shared memory fails there, so keep ``reach="node"`` until your
transport moves tensors some other way. ``rayaccel.ray.init``/``connect`` then register it with Ray,
``rayaccel transports`` shows where it is chosen, and the certified tier's RAC301 sends tensors through it
between two real Ray actors. Until it is declared, RAC301 is skipped ("the plugin declares no tensor
transports"), never passed.
"""

from __future__ import annotations

from rayaccel import SharedMemoryTransport

NAME = "{{ cookiecutter.__family | upper | replace('-', '_') }}_SHM"


class Transport(SharedMemoryTransport):
    """The reference shared-memory transport, registered under this family's name."""

    def tensor_transport_backend(self) -> str:
        return NAME
