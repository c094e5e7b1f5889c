#!/usr/bin/env bash
# The GPU validation run of `kvcalc measure`, in one prepared script for the device tool:
#   run(command="bash bench/measure_gpu.sh", timeout_s=540)
# It uses the machine's own python3 (torch, Triton, typer, rich, pyyaml, numpy in its image) with this
# checkout on PYTHONPATH; nothing is installed or fetched. Four files land under $OUT: device.txt,
# log.txt, summary.json and summary.md (the table for docs/measure.md).
# On a CPU, KVCALC_DRY=1 bash bench/measure_gpu.sh runs every step with small shapes.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
OUT="${OUT:-$PWD/measure-out}"; export OUT
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
{ nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.mem,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
  "$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
  "$PY" -c "import triton; print('triton', triton.__version__)" 2>&1 || true
} 2>&1 | tee "$OUT/device.txt"
timeout 500 "$PY" bench/measure_gpu.py 2>&1 | tee "$OUT/log.txt"
