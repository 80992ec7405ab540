"""Write ``trn2.48xlarge-lnc1``: the trn2.48xlarge node run at Logical NeuronCore config 1, from trn2.48xlarge.

Run from the repository root: ``.venv/bin/python reference_plugins/neuron/tools/build_lnc1_fixture.py``.

What differs from the trn2.48xlarge fixture (LNC=2, the Trn2 default), and why:

* ``NEURON_LOGICAL_NC_CONFIG=1`` is set in the node's environment: the documented way to run a Trainium2 at
  LNC=1 (the Logical NeuronCore configuration page). Each of the 8 physical NeuronCore-v3 of a device is then a
  logical core of its own.
* neuron-ls, run in that environment, reports ``nc_count: 8`` and ``logical_neuroncore_config: 1`` per device
  and the global ids ``8i .. 8i+7``: 128 logical cores, the ids ``NEURON_RT_VISIBLE_CORES`` then selects.
* The driver's sysfs is unchanged: the driver knows physical cores only (``core_count`` 8, one
  ``neuron_core<k>`` per physical core) whatever the LNC, so the sysfs fallback (faults ``neuron-ls-fails``,
  ``neuron-ls-missing``) must read the LNC from the environment to give the same 128 ids (their ``units``: each
  device's ids as the listing gives them).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from trn2_derived import HERE, run, trn2_fixture, write_fixture

NEURON_LS = "/opt/aws/neuron/bin/neuron-ls --json-output"
PHYSICAL_CORES = 8  # NeuronCore-v3 per Trainium2 (the driver's V3_NC_PER_DEVICE)


def lnc1_listing(old_stdout: str) -> str:
    devices: list[dict[str, Any]] = json.loads(old_stdout)
    for device in devices:
        index = device["neuron_device"]
        device["nc_count"] = PHYSICAL_CORES
        device["logical_neuroncore_config"] = 1
        device["neuroncore_ids"] = list(range(index * PHYSICAL_CORES, (index + 1) * PHYSICAL_CORES))
    return json.dumps(devices, indent=4) + "\n"


def main(out_dir: Path = HERE) -> int:
    base = trn2_fixture()
    data = copy.deepcopy(base)
    host = data["host"]
    host["hostname"] = "ip-10-0-13-18"
    host["env"] = {"NEURON_LOGICAL_NC_CONFIG": "1"}
    host["commands"][NEURON_LS]["stdout"] = lnc1_listing(host["commands"][NEURON_LS]["stdout"])
    # The sysfs fallback must number the cores as neuron-ls does at LNC=1: each device's ids from the listing.
    listing = json.loads(host["commands"][NEURON_LS]["stdout"])
    listed = {device["neuron_device"]: device["neuroncore_ids"] for device in listing}
    units = {device_id: [str(core) for core in listed[index]]
             for index, device_id in enumerate(data["expected"]["device_ids"])}
    data["name"] = "trn2.48xlarge-lnc1"
    data["description"] = ("EC2 trn2.48xlarge at Logical NeuronCore config 1 (NEURON_LOGICAL_NC_CONFIG=1): 16 "
                           "Trainium2 devices x 8 physical NeuronCore-v3, each its own logical core, so neuron-ls "
                           "reports 8 cores per device (128 in all, ids 8i..8i+7), the ids NEURON_RT_VISIBLE_CORES "
                           "takes; the driver's sysfs is the same as at LNC=2")
    data["source"] = base["source"] + (
        "; LNC=1 through NEURON_LOGICAL_NC_CONFIG=1 as the Logical NeuronCore configuration page documents (1 or 2 on "
        "Trn2; at 1 every physical core is a logical core), neuron-ls's nc_count and neuroncore_ids following it; "
        "written by tools/build_lnc1_fixture.py from trn2.48xlarge")
    expected = data["expected"]
    resources = {"neuron_cores": 128.0, "accelerator_type:aws-neuron-core": 1.0}
    expected["resources"] = dict(resources)
    expected["labels"]["aws.amazon.com/neuron.logical-nc-config"] = "1"
    for fault in data.get("faults", []):
        fault["description"] = fault["description"].replace("at the default LNC=2, so 4 logical cores each and "
                                                            "logical ids 0-63", "at LNC=1 (NEURON_LOGICAL_NC_CONFIG), "
                                                            "so 8 logical cores each and ids 0-127")
        fault["description"] = fault["description"].replace("(64 logical cores)", "(128 logical cores at LNC=1)")
        fault["expected"]["resources"] = dict(resources)
        if "units" in fault["expected"]:
            fault["expected"]["units"] = {device_id: list(ids) for device_id, ids in units.items()}
    return write_fixture(data, out_dir)


if __name__ == "__main__":
    run(main)
