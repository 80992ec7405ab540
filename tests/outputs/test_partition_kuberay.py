"""Partitions in the Kubernetes and Ray start exports (issue 25): a KubeRay worker group for a node with MIG
instances or AMD compute partitions asks Kubernetes for each partition profile's extended resource, named as
the vendor's device plugin advertises it (NVIDIA's mixed MIG strategy: ``nvidia.com/mig-<profile>``; AMD's
mixed naming: ``amd.com/<compute>_<memory>``), never for a partitioned GPU whole and never for 0 of
anything; the pod template is validated by kubernetes-validate. The ``ray start`` line offers the partition
resources and not ``GPU`` for partitioned GPUs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_export_k8s import check_k8s_object, check_ray_start

from rayaccel.inventory.builder import collect_inventory
from rayaccel.outputs.exporters import ExportError, ExportOptions, export
from rayaccel.outputs.exporters.kuberay import partition_resource, pod_template
from rayaccel.plugins.manager import default_manager
from rayaccel.records import NodeInventory, SchedulerNames
from rayaccel.simulation.host_factory import make_host


def inventory(ref: str, *faults: str) -> NodeInventory:
    manager = default_manager()
    return collect_inventory(manager, make_host(ref, list(faults), manager=manager))


def kuberay(inv: NodeInventory) -> dict[str, Any]:
    fragment: dict[str, Any] = export("kuberay", inv, ExportOptions()).data
    check_k8s_object({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "rayaccel-export"},
                      "template": pod_template(fragment)})
    return fragment


def limits(fragment: dict[str, Any]) -> dict[str, str]:
    (container,) = pod_template(fragment)["spec"]["containers"]
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert "0" not in container["resources"]["limits"].values()  # a pod never asks for 0 of anything
    return container["resources"]["limits"]  # type: ignore[no-any-return]


def ray_resources(fragment: dict[str, Any]) -> dict[str, float]:
    params = fragment["spec"]["workerGroupSpecs"][0]["rayStartParams"]
    resources: dict[str, float] = json.loads(json.loads(params["resources"])) if "resources" in params else {}
    if "num-gpus" in params:
        resources["GPU"] = int(params["num-gpus"])
    return resources


@pytest.mark.parametrize(("ref", "wanted"), [
    # NVIDIA's device plugin, mixed MIG strategy: one resource per MIG profile, nvidia.com/gpu for whole GPUs.
    ("nvidia/a100-mig", {"nvidia.com/mig-3g.20gb": "1", "nvidia.com/mig-2g.10gb": "2"}),
    # '1g.10gb+me' as the device plugin names it, '+' as '.' (k8s-device-plugin internal/plugin/server_test.go).
    # A compute instance by its '<c>c.<g>g.<memory>gb' profile, as go-nvlib's NewMigProfile writes one (c != g).
    ("nvidia/h100-mig", {"nvidia.com/mig-2c.3g.40gb": "1", "nvidia.com/mig-1c.3g.40gb": "1",
                         "nvidia.com/mig-2g.20gb": "1", "nvidia.com/mig-1g.10gb": "1",
                         "nvidia.com/mig-1g.10gb.me": "1"}),
    ("nvidia/a100-80gb-mig-mixed", {"nvidia.com/gpu": "1", "nvidia.com/mig-3g.40gb": "1",
                                    "nvidia.com/mig-2g.20gb": "2"}),
    # AMD's device plugin, resource_naming_strategy=mixed: amd.com/<compute partition>_<memory partition>.
    ("amd/mi300x-cpx-nps4", {"amd.com/cpx_nps4": "64"}),
    ("amd/mi300x-dpx-amd-smi-26", {"amd.com/dpx_nps1": "16"}),
])
def test_a_worker_group_asks_for_each_partition_profile_as_the_vendors_device_plugin_names_it(
        ref: str, wanted: dict[str, str]) -> None:
    inv = inventory(ref)
    fragment = kuberay(inv)
    assert limits(fragment) == wanted
    # The Ray side of the same group: the partition resources, GPU only for whole GPUs (0 when there are none,
    # so Ray does not count the partitioned GPUs the pod sees).
    resources = ray_resources(fragment)
    assert resources == {**inv.resources, "GPU": inv.resources.get("GPU", 0)}
    family = inv.families[0]
    assert {k: len(v) for k, v in family.partition_units.items()} == {
        k: int(v) for k, v in resources.items() if k in family.partition_units}
    assert resources["GPU"] == len(family.schedulable_units)


def test_an_unhealthy_instance_leaves_the_pods_limits_and_a_gone_gpu_takes_its_instances() -> None:
    one = limits(kuberay(inventory("nvidia/a100-80gb-mig-mixed", "mig-instance-xid-95")))
    assert one == {"nvidia.com/gpu": "1", "nvidia.com/mig-3g.40gb": "1", "nvidia.com/mig-2g.20gb": "1"}
    parent = limits(kuberay(inventory("nvidia/a100-80gb-mig-mixed", "mig-parent-xid-79")))
    assert parent == {"nvidia.com/gpu": "1"}


def test_a_family_without_a_partition_naming_gets_its_resource_dash_profile() -> None:
    inv = inventory("nvidia/a100-mig")
    (family,) = inv.families
    names = SchedulerNames(**{**family.family.schedulers.model_dump(), "kubernetes_partition_resource": None})
    plain = family.model_copy(update={"family": family.family.model_copy(update={"schedulers": names})})
    gpu = plain.devices[0]
    assert [partition_resource(plain, gpu, p) for p in gpu.partitions] == [
        "nvidia.com/gpu-3g.20gb", "nvidia.com/gpu-2g.10gb", "nvidia.com/gpu-2g.10gb"]
    assert limits(kuberay(inv.model_copy(update={"families": [plain]}))) == {
        "nvidia.com/gpu-3g.20gb": "1", "nvidia.com/gpu-2g.10gb": "2"}


def test_a_pattern_naming_an_attribute_the_partition_lacks_is_one_clear_error() -> None:
    inv = inventory("amd/mi300x-cpx-nps4")
    (family,) = inv.families
    devices = [d.model_copy(update={"attributes": {k: v for k, v in d.attributes.items() if k != "memory_partition"}})
               for d in family.devices]
    broken = inv.model_copy(update={"families": [family.model_copy(update={"devices": devices})]})
    with pytest.raises(ExportError, match=r"has no attribute 'memory_partition'.*kubernetes_partition_resource"):
        export("kuberay", broken, ExportOptions())


@pytest.mark.parametrize("pattern", ["nvidia.com/mig", "nvidia.com/mig-{Profile}", "kubernetes.io/mig-{profile}"])
def test_a_partition_resource_pattern_must_have_a_placeholder_in_a_vendor_domain(pattern: str) -> None:
    with pytest.raises(ValueError, match="kubernetes_partition_resource"):
        SchedulerNames(kubernetes_resource="nvidia.com/gpu", kubernetes_partition_resource=pattern)


def test_the_cli_exports_a_mig_worker_group(capsys: pytest.CaptureFixture[str]) -> None:
    from rayaccel.cli import main

    assert main(["export", "--simulate", "nvidia/a100-mig", "--format", "kuberay"]) == 0
    out = capsys.readouterr().out
    assert "nvidia.com/mig-2g.10gb: '2'" in out and "nvidia.com/gpu:" not in out


@pytest.mark.parametrize(("ref", "gpus"), [("nvidia/a100-mig", 0), ("nvidia/a100-80gb-mig-mixed", 1),
                                           ("amd/mi300x-cpx-nps4", 0)])
def test_the_ray_start_line_offers_the_partitions_and_no_partitioned_gpu(ref: str, gpus: int) -> None:
    from rayaccel.ray.node import node_config

    inv = inventory(ref)
    data = export("ray-start", inv, ExportOptions(node_env=node_config(inv).env)).data
    check_ray_start(data)
    assert f"--num-gpus={gpus}" in data["argv"]
    (resources,) = [json.loads(a.split("=", 1)[1]) for a in data["argv"] if a.startswith("--resources=")]
    assert {k: v for k, v in resources.items() if k in inv.families[0].partition_units} == {
        k: len(v) for k, v in inv.families[0].partition_units.items()}
