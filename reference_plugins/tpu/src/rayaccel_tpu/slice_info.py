"""Which slice this host belongs to: GKE environment variables first, else the GCE metadata server.

Ray 2.60 reads the same sources in the same order, but calls the metadata server with no timeout, so a
host where ``metadata.google.internal`` resolves and never answers hangs node start. Here every call is
bounded (:data:`METADATA_TIMEOUT`) and the first unanswered call stops the others.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from rayaccel import Host, HttpUnavailable, collect_problems, malformed, report_problem, vendor_int
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
_TOPOLOGY = re.compile(r"^\d{1,4}(x\d{1,4}){1,2}$")
#: More hosts than any slice has (the largest, v5p-17920, has 2240): a worker id at or above it is garbage.
MAX_WORKERS = 65536


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
        #: What went wrong, for the problem record: the unanswered call, or a key answered with an error status.
        self.errors: list[str] = []

    def get(self, key: str) -> str | None:
        if self.unavailable:
            return None
        try:
            response = self.host.http_get(METADATA_URL + key, headers=METADATA_HEADERS, timeout=METADATA_TIMEOUT)
        except HttpUnavailable as e:
            self.unavailable = True
            self.errors.append(str(e)[:160])
            return None
        if response.status not in (200, 404):
            self.errors.append(f"GET {METADATA_URL}{key}: HTTP {response.status}")
        return response.body if response.status == 200 and response.body else None


def parse_worker_id(raw: str | None, source: str = KEY_WORKER_ID) -> int | None:
    """The worker id; anything but a whole number in [0, MAX_WORKERS) is reported (naming it) and unknown."""
    if not raw:
        return None
    return vendor_int(raw, source, maximum=MAX_WORKERS - 1, fix="check the TPU VM's metadata or the GKE "
                      "TPU environment; the slice resources and labels are left out until it is fixed")


def parse_topology_from_tpu_env(tpu_env: str | None) -> str | None:
    if not tpu_env:
        return None
    found = _TOPOLOGY_IN_TPU_ENV.search(tpu_env)
    return found.group(1).strip().lower() if found else None


def read_slice_info(host: Host, report: bool = False) -> SliceInfo:
    """The slice this host is in. With ``report``, malformed values and an unanswering metadata server are
    reported (once per inventory: the resources hook asks with ``report=True``, the other hooks quietly)."""
    metadata = _Metadata(host)
    with contextlib.nullcontext() if report else collect_problems():  # quiet: into a sink that is dropped
        pod_source = ENV_POD_TYPE if host.getenv(ENV_POD_TYPE) else KEY_POD_TYPE
        raw_pod_type = host.getenv(ENV_POD_TYPE) or metadata.get(KEY_POD_TYPE)
        pod_type = parse_pod_type(raw_pod_type)
        if raw_pod_type and pod_type is None:
            malformed(pod_source, raw_pod_type, "a TPU pod type like v5p-16 or v5litepod-8")
        name = host.getenv(ENV_NAME) or metadata.get(KEY_NAME)
        if name is not None and (not name.strip() or not name.isprintable() or len(name) > 253):
            malformed(ENV_NAME if host.getenv(ENV_NAME) else KEY_NAME, name, "a slice name")
            name = None
        worker_source = ENV_WORKER_ID if host.getenv(ENV_WORKER_ID) else KEY_WORKER_ID
        worker_id = parse_worker_id(host.getenv(ENV_WORKER_ID) or metadata.get(KEY_WORKER_ID), worker_source)
        env_topology = host.getenv(ENV_TOPOLOGY)
        tpu_env = None if env_topology else metadata.get(KEY_TPU_ENV)
        raw_topology = env_topology.strip().lower() if env_topology else parse_topology_from_tpu_env(tpu_env)
        if tpu_env and raw_topology is None:
            malformed(KEY_TPU_ENV, tpu_env, "a tpu-env holding TOPOLOGY: '<topology>'")
        topology = raw_topology if raw_topology and _TOPOLOGY.match(raw_topology) else None
        if raw_topology and topology is None:
            malformed(ENV_TOPOLOGY if env_topology else KEY_TPU_ENV, raw_topology, "a topology like 2x2 or 4x4x4")
        if metadata.errors and not (pod_type and name and worker_id is not None and topology):
            report_problem("metadata-unavailable", f"the GCE metadata server did not answer ({metadata.errors[0]}); "
                           "the TPU slice (pod type, name, worker id) is unknown, so its resources and labels are "
                           "left out", fix="check that the node is a TPU VM and reaches metadata.google.internal, "
                           f"or set {ENV_POD_TYPE}, {ENV_NAME} and {ENV_WORKER_ID}")
    return SliceInfo(pod_type=pod_type, name=name or None, worker_id=worker_id,
                     topology=topology, metadata_unavailable=metadata.unavailable)
