#!/bin/bash
# One prepared run on a machine with a real NVIDIA GPU and no network (the device machine): record a fixture,
# inspect the real GPU and grade the NVIDIA plugin with --conformance-hardware real. Needs .devkit/ beside it:
# the wheels of rayaccel and rayaccel-nvidia (`pip wheel --no-deps . reference_plugins/nvidia`) and of their
# dependencies for the machine's Python (`pip download --python-version 3.12 --only-binary=:all: ...`).
# Writes what it saw under $OUT (at most eight files come back).
export PYTHONUNBUFFERED=1
T=$OUT/tools.txt
{ echo "## python"; python3 -V; which python3; echo "## nvidia-smi -L"; nvidia-smi -L
  echo "## nvidia-smi topo -m"; nvidia-smi topo -m
  echo "## nvidia-smi mig -lgip"; nvidia-smi mig -lgip 2>&1 | head -60
  echo "## nvidia-smi --query-gpu"; nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,pci.device_id,memory.total,driver_version,mig.mode.current,compute_cap --format=csv
  echo "## /dev"; ls -l /dev/nvidia* 2>&1 | head -20; ls /dev/nvidia-caps 2>&1 | head
  echo "## mig-minors"; head -5 /proc/driver/nvidia-caps/mig-minors 2>&1
  echo "## gpus information"; cat /proc/driver/nvidia/gpus/*/information 2>&1 | head -30
  echo "## numa"; cat /sys/bus/pci/devices/*/numa_node 2>/dev/null | sort | uniq -c | head
} > $T 2>&1
nvidia-smi -q -x > $OUT/nvidia-smi-q.xml 2>&1
python3 -m pip install -q --no-index --no-deps .devkit/*.whl >> $T 2>&1 || echo "pip install failed" >> $T
export RAYACCEL_NO_AUTOLOAD=
{ echo "## rayaccel plugins"; timeout 60 python3 -m rayaccel plugins 2>&1 | head -30; } >> $T
timeout 90 python3 -m rayaccel inspect --json --plugin nvidia > $OUT/inspect-real.json 2>>$T; echo "inspect rc=$?" >> $T
timeout 90 python3 -m rayaccel record --plugin nvidia --anonymize -o /tmp/h200-sxm-real.yaml >> $T 2>&1; echo "record rc=$?" >> $T
cp /tmp/h200-sxm-real.yaml $OUT/ 2>/dev/null
timeout 90 python3 -m rayaccel inspect --json --simulate /tmp/h200-sxm-real.yaml > $OUT/inspect-replay.json 2>>$T; echo "replay rc=$?" >> $T
mkdir -p /tmp/ct && cd /tmp/ct && timeout 300 python3 -m pytest -p no:cacheprovider --conformance --conformance-plugin nvidia \
  --conformance-hardware real --conformance-report /tmp/ct/report.json -q -rfEs --tb=line > $OUT/conformance.log 2>&1
echo "conformance rc=$?" >> $OUT/conformance.log
cp /tmp/ct/report.json $OUT/conformance-report.json 2>/dev/null
tail -3 $OUT/conformance.log
