"""Start-up time of kvcalc commands against `python -c pass` and against a floor (bench/floor_app.py:
a typer app parsing size's options that prints one line or a rich table), median of repeated runs.

Usage: python bench/startup.py [runs]   (run it with the Python that has kvcalc installed)
Commands are run from a temporary folder, as a user would, with the console script on PATH.
Peers, where installed (on PATH, or in $PEERS_BIN): ridgepoint and servcalc answering the same kind
of question (`pip install ridgepoint servcalc` into a separate environment).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 21
KV = shutil.which("kvcalc") or "kvcalc"
CASES = [
    ("python -c pass", [sys.executable, "-c", "pass"]),
    ("kvcalc --help", [KV, "--help"]),
    ("kvcalc size --model llama2-7b --seq 4096", [KV, "size", "--model", "llama2-7b", "--seq", "4096"]),
    ("kvcalc size ... --json", [KV, "size", "--model", "llama2-7b", "--seq", "4096", "--json"]),
    ("kvcalc fit --model llama3.1-8b --gpu h100 --seq 8k", [KV, "fit", "--model", "llama3.1-8b", "--gpu", "h100", "--seq", "8k"]),
    ("kvcalc size --model Llama-2-7b-hf (alias scan)", [KV, "size", "--model", "Llama-2-7b-hf", "--seq", "4096"]),
    ("kvcalc roofline --batch 32", [KV, "roofline", "--batch", "32"]),
]
FLOOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor_app.py")
CASES += [
    ("floor: typer app, same options, one line", [sys.executable, FLOOR, "--model", "llama2-7b", "--seq", "4096", "--json"]),
    ("floor: typer app, same options, rich table", [sys.executable, FLOOR, "--model", "llama2-7b", "--seq", "4096"]),
]
RATIOS = [
    ("kvcalc size ... --json", "floor: typer app, same options, one line"),
    ("kvcalc size --model llama2-7b --seq 4096", "floor: typer app, same options, rich table"),
]
"""The issue's aims: size --json within 1.25x of the one-line floor, the table within 1.25x of the rich one."""
CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "configs", "llama3.1-8b.json")


def peer(name: str) -> str | None:
    d = os.environ.get("PEERS_BIN")
    path = os.path.join(d, name) if d else shutil.which(name)
    return path if path and os.path.exists(path) else None


if rp := peer("ridgepoint"):
    CASES.append(
        ("peer: ridgepoint fit llama-3-70b --gpu h100-80gb", [rp, "fit", "llama-3-70b", "--gpu", "h100-80gb", "--ctx", "4096"])
    )
if sc := peer("servcalc"):
    CASES.append(
        (
            'peer: servcalc estimate llama3.1-8b config --gpu "H100 80GB"',
            [sc, "estimate", CONFIG, "--gpu", "H100 80GB", "--prompt", "4096", "--gen", "2"],
        )
    )


def main() -> None:
    cwd = tempfile.mkdtemp()
    env = {**os.environ, "NO_COLOR": "1"}
    for _label, cmd in CASES:
        subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=True)  # warm the page cache
    # Round by round, every command once a round: a machine whose speed drifts (this one's does, by a
    # third over minutes) slows every command alike, so the ratios hold.
    times: dict[str, list[float]] = {label: [] for label, _ in CASES}
    for _ in range(RUNS):
        for label, cmd in CASES:
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, check=True)
            times[label].append(time.perf_counter() - t0)
    rows = [(label, statistics.median(t), min(t), max(t)) for label, t in times.items()]
    base = rows[0][1]
    print(f"{'command':55s} {'median':>9s} {'min':>9s} {'max':>9s} {'- python':>9s}")
    for label, med, lo, hi in rows:
        print(f"{label:55s} {med * 1e3:7.1f}ms {lo * 1e3:7.1f}ms {hi * 1e3:7.1f}ms {(med - base) * 1e3:7.1f}ms")
    for a, b in RATIOS:
        per_round = statistics.median(x / y for x, y in zip(times[a], times[b]))
        print(f"{a} / {b}: {per_round:.2f}x, median of the rounds' ratios (aim: 1.25x or less)")
    print(f"({RUNS} rounds, {sys.version.split()[0]}, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
