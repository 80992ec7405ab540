"""Write ``trn2u.48xlarge-ultraserver-x2``: a Trn2 UltraServer node with Neuron 2.34 tools, from trn2.48xlarge.

Run from the repository root: ``.venv/bin/python reference_plugins/neuron/tools/build_ultraserver_fixture.py``.

What differs from the trn2.48xlarge fixture, and why:

* ``neuron-ls --output-format json`` (Neuron 2.34+) prints an object: instance facts at the top level
  (``instance_type``, ``instance_id``, ``logical_neuroncore_config``, ``ultraserver``) and the devices under
  ``neuron_devices``. AWS announced the change (top-level instance and UltraServer details) without the full
  layout; the key names here are this fixture's assumption. ``--json-output`` is refused (exit 2).
* The driver's tree is read through ``/sys/class/neuron_device`` and its hardware ECC counters are
  directories holding ``total`` (the layout the driver uses for its status counters; assumed for the
  post-2.31 driver, not checked against one).
* The node runs in a 2-node UltraServer group: ``NEURON_RT_ULTRASERVER_MODE=2`` (X2H),
  ``NEURON_GLOBAL_TOPOID=1``, ``NEURON_GLOBAL_TOPOID0_HOST`` naming the leader (AWS's
  k8s-ultraserver-init-script writes these).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

from trn2_derived import HERE, run, trn2_fixture, write_fixture

NEURON_LS = "/opt/aws/neuron/bin/neuron-ls"
OLD_ROOT, NEW_ROOT = "/sys/devices/virtual/neuron_device", "/sys/class/neuron_device"
COUNTERS = ("mem_ecc_uncorrected", "mem_ecc_repairable_uncorrected", "sram_ecc_uncorrected")
LEADER = "ip-10-1-40-11.us-east-2.compute.internal"


def files(old: dict[str, str]) -> dict[str, str]:
    out = {}
    for path, value in old.items():
        if path.startswith(OLD_ROOT):
            path = NEW_ROOT + path[len(OLD_ROOT):]
            if path.rsplit("/", 1)[-1] in COUNTERS:
                path += "/total"
        elif path.endswith("/dmi/id/product_name"):
            value = "trn2u.48xlarge\n"
        out[path] = value
    return out


def new_json(old_stdout: str) -> str:
    devices = json.loads(old_stdout)
    shared = {"instance_type": "trn2u.48xlarge", "instance_id": "i-0c1d2e3f4a5b6c7d8",
              "logical_neuroncore_config": 2,
              "ultraserver": {"mode": 2, "server_id": "7f3a9c0e12b4d5e6", "node_id": 1}}
    entries = [{k: v for k, v in d.items() if k != "logical_neuroncore_config"} for d in devices]
    return json.dumps({**shared, "neuron_devices": entries}, indent=4) + "\n"


def main(out_dir: Path = HERE) -> int:
    base = trn2_fixture()
    data = copy.deepcopy(base)
    host = data["host"]
    host["hostname"] = "ip-10-1-40-12"
    host["env"] = {"NEURON_RT_ULTRASERVER_MODE": "2", "NEURON_GLOBAL_TOPOID": "1",
                   "NEURON_GLOBAL_TOPOID0_HOST": LEADER}
    host["files"] = files(host["files"])
    old = host["commands"].pop(f"{NEURON_LS} --json-output")
    host["commands"] = {
        f"{NEURON_LS} --output-format json": {"stdout": new_json(old["stdout"])},
        f"{NEURON_LS} --json-output": {"returncode": 2, "stdout": "",
                                       "stderr": "neuron-ls: unknown flag: --json-output (use --output-format json)\n"},
    }
    data["name"] = "trn2u.48xlarge-ultraserver-x2"
    data["description"] = ("EC2 trn2u.48xlarge, node 1 of a 2-node Trn2 UltraServer group "
                           "(NEURON_RT_ULTRASERVER_MODE=2), Neuron 2.34 tools: neuron-ls --output-format json only; "
                           "driver tree under /sys/class/neuron_device with ECC counters as <counter>/total")
    data["source"] = ("neuron-ls --output-format json of aws-neuronx-tools from Neuron 2.34, as announced at "
                      "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/index.html (the "
                      "end-of-support notice for --json-output: top-level instance and UltraServer details; the full "
                      "layout is unpublished, key names assumed); AWS k8s-ultraserver-init-script "
                      "(https://github.com/aws-neuron/aws-neuron-sdk, NEURON_RT_ULTRASERVER_MODE 1=X4, 2=X2H, 3=X2V, "
                      "4=X1, NEURON_GLOBAL_TOPOID, NEURON_GLOBAL_TOPOID0_HOST); Neuron driver sysfs under "
                      "/sys/class/neuron_device with counters as <counter>/total assumed for post-2.31 "
                      "aws-neuronx-dkms (https://github.com/aws-neuron/aws-neuron-driver); devices, physical cores "
                      "(core_count 8) and serials as in trn2.48xlarge")
    expected = data["expected"]
    labels = expected["labels"]
    labels["aws.amazon.com/neuron.instance-type"] = "trn2u.48xlarge"
    # 16 devices here x 2 hosts in the group; the leader's host name is the group's id.
    labels["rayaccel.io/scale-up-domain"] = LEADER
    labels["rayaccel.io/scale-up-domain-kind"] = "ultraserver"
    labels["rayaccel.io/scale-up-domain-size"] = "32"
    ordered = {k: labels[k] for k in labels if not k.startswith("aws.amazon.com/")}
    ordered.update({k: labels[k] for k in labels if k.startswith("aws.amazon.com/")})
    expected["labels"] = ordered
    listing = json.loads(host["commands"][f"{NEURON_LS} --output-format json"]["stdout"])
    listing["neuron_devices"][5]["connected_to"] = [1, 4, 9, 128]
    data["faults"] = [
        {"name": "neuron-ls-fails", "kind": "other",
         "description": "neuron-ls exits 1 with both flags (a broken tools install) while the driver's sysfs tree is "
                        "there: the devices are read from sysfs, with a warning",
         "patch": {"commands": {f"{NEURON_LS} --output-format json": {
             "returncode": 1, "stdout": "", "stderr": "neuron-ls: failed to open /dev/neuron0: Permission denied\n"}}},
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["neuron-ls-failed"]}},
        {"name": "ecc-counters-missing", "kind": "other",
         "description": "the driver publishes no hardware ECC counters for device 3: its ECC state is unknown, not "
                        "zero (the device stays schedulable, health says it cannot see ECC errors)",
         "patch": {"files": {f"{NEW_ROOT}/neuron3/stats/hardware/{c}/total": None for c in COUNTERS}},
         "expected": {"reasons": {expected["device_ids"][3]: ["neuron-ecc-unreadable"]},
                      "devices": 16, "health": {expected["device_ids"][3]: "unknown"},
                      "resources": expected["resources"]}},
        {"name": "topoid-beyond-group", "kind": "other",
         "description": "NEURON_GLOBAL_TOPOID=2 in a 2-node group (X2H: nodes 0 and 1), as a node moved from an X4 "
                        "group keeps it: the node's place is unknown, not node 2, with a warning; the devices stay",
         "patch": {"env": {"NEURON_GLOBAL_TOPOID": "2"}},
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["malformed-value"]}},
        {"name": "x1-topoid-kept", "kind": "other",
         "description": "the node is set to X1 (NEURON_RT_ULTRASERVER_MODE=4: a group of itself, AWS's "
                        "init script's one-node mode) but keeps NEURON_GLOBAL_TOPOID=1 from its X2H group: node 1 "
                        "of a one-node group is no place, so it is unknown, with a warning; the devices stay",
         "patch": {"env": {"NEURON_RT_ULTRASERVER_MODE": "4", "NEURON_GLOBAL_TOPOID": "1"}},
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["malformed-value"]}},
        {"name": "x2v-topoid-beyond-group", "kind": "other",
         "description": "X2V (NEURON_RT_ULTRASERVER_MODE=3: 2 nodes, paired vertically) with NEURON_GLOBAL_TOPOID=3 "
                        "kept from an X4 group: the node's place is unknown, not node 3, with a warning",
         "patch": {"env": {"NEURON_RT_ULTRASERVER_MODE": "3", "NEURON_GLOBAL_TOPOID": "3"}},
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["malformed-value"]}},
        {"name": "neuron-ls-peer-out-of-range", "kind": "other",
         "description": "neuron-ls lists device 5 as connected to device 128 where its neighbour 6 was (a garbled "
                        "entry; the driver numbers devices 0-127): the peer is refused with a warning, not taken for "
                        "a device; the devices and the other links stay",
         "patch": {"commands": {f"{NEURON_LS} --output-format json": {
             "stdout": json.dumps(listing, indent=4) + "\n"}}},
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["malformed-value"]}},
        {"name": "neuron-ls-fails-no-core-count", "kind": "other",
         "description": "neuron-ls exits 1 and the driver publishes no core_count (a driver before the file): the "
                        "physical cores are counted from the neuron_core<k> directories (8 a device), so the "
                        "devices and cores read from sysfs are those of the healthy node, with a warning",
         "patch": {"files": {f"{NEW_ROOT}/neuron{i}/core_count": None for i in range(16)},
                   "commands": {f"{NEURON_LS} --output-format json": {
                       "returncode": 1, "stdout": "",
                       "stderr": "neuron-ls: failed to open /dev/neuron0: Permission denied\n"}}},
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["neuron-ls-failed"]}},
    ]
    return write_fixture(data, out_dir)


if __name__ == "__main__":
    run(main)
