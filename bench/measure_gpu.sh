#!/usr/bin/env bash
# The GPU sweep of `kvcalc measure`, in one prepared run for the device tool:
#   run(command="bash bench/measure_gpu.sh", timeout_s=540)
# Uses the machine's own python3 (torch, Triton, typer, rich, pyyaml, numpy are in its image) with this
# checkout on PYTHONPATH; nothing is installed or fetched. JSON lands under $OUT; the table prints last.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
OUT="${OUT:-$PWD/measure-out}"; export OUT
mkdir -p "$OUT"
{ nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv || true
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name(0))"
} 2>&1 | tee "$OUT/device.txt"
timeout 500 python3 bench/measure_gpu.py 2>&1 | tee "$OUT/log.txt"
