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
* The node is worker 1 of a job of one 2-node UltraServer group, as AWS's k8s-ultraserver-init-script
  (aws-neuron/aws-neuron-sdk ``src/k8/k8s-ultraserver-init-script.sh``) writes each worker's environment:
  ``NEURON_RT_ULTRASERVER_MODE=2`` (X2H), ``NEURON_RT_ULTRASERVER_SERVER_ID`` (the driver's ``server_id_2``),
  ``NEURON_RT_ULTRASERVER_NODE_ID=1``, ``NEURON_GLOBAL_TOPOID=1`` (its number in the whole job) and
  ``NEURON_GLOBAL_TOPOID0_HOST`` (worker 0's host name). Its faults are other workers the script numbers the
  same way (a job of two pairs, of two UltraServers, of single nodes) and states only a person's hand writes.
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
#: The driver's server_id_<nodes> of this pair, of a job's second pair and of its second UltraServer (16 [0-9a-z],
#: as AWS's device plugin labels them: ultraserver-server-id-2=u5wy80u0o2saugxy in deploy/eks/ultraserver.rst).
SERVER, SECOND_PAIR, SECOND_ULTRASERVER = "7f3a9c0e12b4d5e6", "c41d0b7e9a2f6e83", "9b5e2d7c03a1f4e8"
#: The init script's values where the driver gives no server id and node id (X1).
NO_SERVER_ID, NO_NODE_ID = "0000000000000000", "-1"
ENV = ("NEURON_RT_ULTRASERVER_MODE", "NEURON_GLOBAL_TOPOID", "NEURON_GLOBAL_TOPOID0_HOST",
       "NEURON_RT_ULTRASERVER_SERVER_ID", "NEURON_RT_ULTRASERVER_NODE_ID")


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


def set_up(mode: int, topoid: int, server_id: str | None, node_id: int | None) -> dict[str, str | None]:
    """One worker's environment as AWS's init script writes it (None: a variable a person's set-up left out)."""
    values = (str(mode), str(topoid), LEADER, server_id, None if node_id is None else str(node_id))
    return dict(zip(ENV, values, strict=True))


def new_json(old_stdout: str, mode: int = 2, server_id: str = SERVER, node_id: int = 1) -> str:
    devices = json.loads(old_stdout)
    shared = {"instance_type": "trn2u.48xlarge", "instance_id": "i-0c1d2e3f4a5b6c7d8",
              "logical_neuroncore_config": 2,
              "ultraserver": {"mode": mode, "server_id": server_id, "node_id": node_id}}
    entries = [{k: v for k, v in d.items() if k != "logical_neuroncore_config"} for d in devices]
    return json.dumps({**shared, "neuron_devices": entries}, indent=4) + "\n"


def worker(old_stdout: str, mode: int, topoid: int, server_id: str | None, node_id: int | None,
           driver: tuple[str, int] | None = None) -> dict[str, object]:
    """The patch making the node another worker of a job; neuron-ls reports the mode and the driver's ids
    (``driver``: where the set-up wrote none of them, those the driver has all the same)."""
    listed = driver or (server_id or NO_SERVER_ID, int(NO_NODE_ID) if node_id is None else node_id)
    return {"env": set_up(mode, topoid, server_id, node_id),
            "commands": {f"{NEURON_LS} --output-format json": {"stdout": new_json(old_stdout, mode, *listed)}}}


def main(out_dir: Path = HERE) -> int:
    base = trn2_fixture()
    data = copy.deepcopy(base)
    host = data["host"]
    host["hostname"] = "ip-10-1-40-12"
    host["env"] = set_up(2, 1, SERVER, 1)
    host["files"] = files(host["files"])
    old = host["commands"].pop(f"{NEURON_LS} --json-output")
    host["commands"] = {
        f"{NEURON_LS} --output-format json": {"stdout": new_json(old["stdout"])},
        f"{NEURON_LS} --json-output": {"returncode": 2, "stdout": "",
                                       "stderr": "neuron-ls: unknown flag: --json-output (use --output-format json)\n"},
    }
    data["name"] = "trn2u.48xlarge-ultraserver-x2"
    data["description"] = ("EC2 trn2u.48xlarge, node 1 of a 2-node Trn2 UltraServer group "
                           "(NEURON_RT_ULTRASERVER_MODE=2, its job's worker 1), Neuron 2.34 tools: neuron-ls "
                           "--output-format json only; "
                           "driver tree under /sys/class/neuron_device with ECC counters as <counter>/total")
    data["source"] = ("neuron-ls --output-format json of aws-neuronx-tools from Neuron 2.34, as announced at "
                      "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/release-notes/index.html (the "
                      "end-of-support notice for --json-output: top-level instance and UltraServer details; the full "
                      "layout is unpublished, key names assumed); AWS k8s-ultraserver-init-script "
                      "(https://github.com/aws-neuron/aws-neuron-sdk src/k8/k8s-ultraserver-init-script.sh at 3afa0fd: "
                      "NEURON_RT_ULTRASERVER_MODE 1=X4, 2=X2H, 3=X2V, 4=X1, NEURON_RT_ULTRASERVER_SERVER_ID and "
                      "_NODE_ID from the driver's server_id_<nodes> and node_id_<nodes>, NEURON_GLOBAL_TOPOID "
                      "numbered over the job's workers, NEURON_GLOBAL_TOPOID0_HOST worker 0's host; server ids as "
                      "deploy/eks/ultraserver.rst's node labels); Neuron driver sysfs under "
                      "/sys/class/neuron_device with counters as <counter>/total assumed for post-2.31 "
                      "aws-neuronx-dkms (https://github.com/aws-neuron/aws-neuron-driver); devices, physical cores "
                      "(core_count 8) and serials as in trn2.48xlarge")
    expected = data["expected"]
    labels = expected["labels"]
    labels["aws.amazon.com/neuron.instance-type"] = "trn2u.48xlarge"
    # 16 devices here x 2 hosts in the group; the driver's server id is the group's id.
    labels["rayaccel.io/scale-up-domain"] = SERVER
    labels["rayaccel.io/scale-up-domain-kind"] = "ultraserver"
    labels["rayaccel.io/scale-up-domain-size"] = "32"
    ordered = {k: labels[k] for k in labels if not k.startswith("aws.amazon.com/")}
    ordered.update({k: labels[k] for k in labels if k.startswith("aws.amazon.com/")})
    expected["labels"] = ordered
    expected["domains"] = {SERVER: {"size": 32, "hosts": 2, "host_index": 1}}
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
        {"name": "x2h-second-pair", "kind": "other",
         "description": "worker 3 of a 4-worker X2H job (two pairs): AWS's init script numbers "
                        "NEURON_GLOBAL_TOPOID over the whole job, names worker 0's host beside it and writes the "
                        "second pair's server id and the node's id in it: node 1 of its own group of 2, no warning",
         "patch": worker(old["stdout"], 2, 3, SECOND_PAIR, 1),
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"], "problems_exactly": True,
                      "domains": {SECOND_PAIR: {"size": 32, "hosts": 2, "host_index": 1}}}},
        {"name": "x4-second-ultraserver", "kind": "other",
         "description": "worker 6 of an 8-worker X4 job (two UltraServers, NEURON_RT_ULTRASERVER_MODE=1): node 2 "
                        "of the second UltraServer, named by its server id, no warning",
         "patch": worker(old["stdout"], 1, 6, SECOND_ULTRASERVER, 2),
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"], "problems_exactly": True,
                      "domains": {SECOND_ULTRASERVER: {"size": 64, "hosts": 4, "host_index": 2}}}},
        {"name": "x1-third-worker", "kind": "other",
         "description": "worker 2 of a 3-worker X1 job (NEURON_RT_ULTRASERVER_MODE=4): the script writes the "
                        "driver-less defaults, server id 0000000000000000 and node id -1 (\"only valid for node "
                        "configs > 1\"): a group of itself, the job's third, no warning",
         "patch": worker(old["stdout"], 4, 2, NO_SERVER_ID, int(NO_NODE_ID)),
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"], "problems_exactly": True,
                      "domains": {f"{LEADER}.2": {"size": 16, "hosts": 1, "host_index": 0}}}},
        {"name": "x2h-set-up-without-ids", "kind": "other",
         "description": "a set-up written by hand with the mode and the job's numbering only (no "
                        "NEURON_RT_ULTRASERVER_SERVER_ID or _NODE_ID): worker 2 of an X2H job is node 0 of the "
                        "job's second pair, named after worker 0's host and the pair's number, no warning",
         "patch": worker(old["stdout"], 2, 2, None, None, driver=(SECOND_PAIR, 0)),
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"], "problems_exactly": True,
                      "domains": {f"{LEADER}.1": {"size": 32, "hosts": 2, "host_index": 0}}}},
        {"name": "x1-server-id-kept", "kind": "other",
         "description": "NEURON_RT_ULTRASERVER_MODE edited to 4 (X1) by hand, the X2H pair's server id and node id "
                        "1 kept: the script writes neither in X1, so both are malformed values, with a warning; "
                        "the node is a group of itself, the job's worker 1",
         "patch": {"env": {"NEURON_RT_ULTRASERVER_MODE": "4"}},
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["malformed-value"],
                      "domains": {f"{LEADER}.1": {"size": 16, "hosts": 1, "host_index": 0}}}},
        {"name": "x2v-node-id-beyond-group", "kind": "other",
         "description": "NEURON_RT_ULTRASERVER_NODE_ID=3 in an X2V group (NEURON_RT_ULTRASERVER_MODE=3), written "
                        "by hand from an X4 group's: the driver's node_id_2 is 0 or 1, so it is malformed, with a "
                        "warning; the place is the job's numbering's, worker 1 of its pair",
         "patch": {"env": {"NEURON_RT_ULTRASERVER_MODE": "3", "NEURON_RT_ULTRASERVER_NODE_ID": "3"}},
         "expected": {"devices": 16, "health": {}, "resources": expected["resources"],
                      "problem_codes": ["malformed-value"],
                      "domains": {SERVER: {"size": 32, "hosts": 2, "host_index": 1}}}},
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
