"""ACME release 1.1, a regression of release 1.0 (``acme_release_1``) the registry must show: its ``ACME_FILE``
transport waits a quarter of a second in every receive, so RAC310, held to release 1.0's report, fails naming
the transport's latency and bandwidth. Everything else is release 1.0's."""

from __future__ import annotations

import time
from typing import Any

from rayaccel import TransportSpec, hookimpl
from rayaccel_testplugins import acme_wired
from rayaccel_testplugins.acme_wired import AcmeFileTransport
from rayaccel_testplugins.derived import copy_hooks

copy_hooks(acme_wired, globals(), own=("rayaccel_transports",))

__version__ = "1.1"
#: What every receive of release 1.1 costs more than release 1.0's.
RECEIVE_DELAY_S = 0.25


class SlowFileTransport(AcmeFileTransport):
    """Release 1.0's transport, slowed on the receiving side (a vendor's regression, not a test's wait)."""

    def recv_multiple_tensors(self, obj_id: str, tensor_transport_metadata: Any, communicator_metadata: Any,
                              target_buffers: list[Any] | None = None) -> list[Any]:
        time.sleep(RECEIVE_DELAY_S)
        return super().recv_multiple_tensors(obj_id, tensor_transport_metadata, communicator_metadata,
                                             target_buffers)


@hookimpl
def rayaccel_transports() -> list[TransportSpec]:
    return [spec.model_copy(update={"manager_class": "rayaccel_testplugins.acme_release_2:SlowFileTransport"})
            for spec in acme_wired.rayaccel_transports()]
