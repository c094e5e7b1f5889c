#!/usr/bin/env bash
# Start-up time: median wall time of kvcalc --help, size, fit and roofline against `python -c pass`,
# side by side in one run. Usage: bench/startup.sh [runs]  (with kvcalc installed in the active Python)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec python "$here/startup.py" "${1:-21}"
