"""Which slice this host belongs to: GKE environment variables first, else the GCE metadata server.

Ray 2.60 reads the same sources in the same order, but calls the metadata server with no timeout, so a
host where ``metadata.google.internal`` resolves and never answers hangs node start. Here every call is
bounded (:data:`METADATA_TIMEOUT`) and the first unanswered call stops the others.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rayaccel import Host, HttpUnavailable
from rayaccel_tpu.podtype import parse_pod_type

METADATA_URL = "http://metadata.google.internal/computeMetadata/v1/instance/attributes/"
METADATA_HEADERS = {"Metadata-Flavor": "Google"}
#: The metadata server answers in milliseconds on GCE; off GCE it does not resolve at all.
METADATA_TIMEOUT = 1.0

ENV_POD_TYPE = "TPU_ACCELERATOR_TYPE"
ENV_TOPOLOGY = "TPU_TOPOLOGY"
ENV_WORKER_ID = "TPU_WORKER_ID"
ENV_NAME = "TPU_NAME"

KEY_POD_TYPE = "accelerator-type"
KEY_TPU_ENV = "tpu-env"
KEY_NAME = "instance-id"
KEY_WORKER_ID = "agent-worker-number"

_TOPOLOGY_IN_TPU_ENV = re.compile(r"TOPOLOGY:\s*'([^']+)'")


@dataclass(frozen=True)
class SliceInfo:
    pod_type: str | None = None
    name: str | None = None
    worker_id: int | None = None
    topology: str | None = None
    #: Set when the metadata server was asked and did not answer.
    metadata_unavailable: bool = False

    @property
    def complete(self) -> bool:
        """Ray adds the slice resources only when name, worker id and pod type are all known."""
        return bool(self.name) and self.worker_id is not None and bool(self.pod_type)


class _Metadata:
    """GETs attribute keys; after one unanswered call, answers None without asking again."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.unavailable = False

    def get(self, key: str) -> str | None:
        if self.unavailable:
            return None
        try:
            response = self.host.http_get(METADATA_URL + key, headers=METADATA_HEADERS, timeout=METADATA_TIMEOUT)
        except HttpUnavailable:
            self.unavailable = True
            return None
        return response.body if response.status == 200 and response.body else None


def parse_worker_id(raw: str | None) -> int | None:
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


def parse_topology_from_tpu_env(tpu_env: str | None) -> str | None:
    if not tpu_env:
        return None
    found = _TOPOLOGY_IN_TPU_ENV.search(tpu_env)
    return found.group(1).strip().lower() if found else None


def read_slice_info(host: Host) -> SliceInfo:
    metadata = _Metadata(host)
    raw_pod_type = host.getenv(ENV_POD_TYPE) or metadata.get(KEY_POD_TYPE)
    name = host.getenv(ENV_NAME) or metadata.get(KEY_NAME)
    worker_id = parse_worker_id(host.getenv(ENV_WORKER_ID) or metadata.get(KEY_WORKER_ID))
    env_topology = host.getenv(ENV_TOPOLOGY)
    topology = env_topology.strip().lower() if env_topology else parse_topology_from_tpu_env(metadata.get(KEY_TPU_ENV))
    return SliceInfo(pod_type=parse_pod_type(raw_pod_type), name=name or None, worker_id=worker_id,
                     topology=topology, metadata_unavailable=metadata.unavailable)
