"""broken-schedulers: an ACME card advertised to Kubernetes as NVIDIA's GPU, with no Slurm GRES name; fails RAC304
(and holds supported)."""

from __future__ import annotations

from rayaccel import SchedulerNames
from rayaccel_testplugins.broken_base import broken_plugin

FAMILY = broken_plugin(globals(), "broken-schedulers", schedulers=SchedulerNames(
    kubernetes_resource="nvidia.com/gpu", dra_driver="gpu.nvidia.com", device_files=["/dev/acme{index}"]))
