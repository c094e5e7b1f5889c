"""A 100,000-point roofline as JSON, against a floor measured in the same rounds.

Usage: python bench/roofline_json.py [rounds] [REFERENCE]   (default 5 rounds; run it with the Python
that has kvcalc installed; REFERENCE: a checkout of another kvcalc release, run from its own source
in the same rounds, e.g. `git worktree add /tmp/ref 8bee7fe`)

Each round times, one after the other:
  - the command: `kvcalc roofline --batch 1..1000:1 --seq 1k..100k:1k --json > file` (wall time,
    start-up, the grid and writing 83 MB included);
  - the floor: `python -c pass` plus the standard library's C encoder writing the same document
    (`json.dumps` of the command's own output, loaded beforehand and not timed), the least any
    Python tool spends to print that JSON once it has it.
  - with REFERENCE, the same command from that checkout (``python -m kvcalc``, PYTHONPATH=REFERENCE).
The figure is the median of the rounds' ratios (command / floor): this machine's speed drifts by a
third within minutes, and a ratio taken within one round compares like with like.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
REFERENCE = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
KV = shutil.which("kvcalc") or "kvcalc"
ARGS = ["roofline", "--batch", "1..1000:1", "--seq", "1k..100k:1k", "--json"]
DUMPS = (
    "import json, sys, time\n"
    "doc = json.load(open(sys.argv[1]))\n"
    "t = time.perf_counter()\n"
    "s = json.dumps(doc, ensure_ascii=False, separators=(',', ':'))\n"
    "sys.stdout.write(repr(time.perf_counter() - t))\n"
)


def wall(cmd: list[str], out: str | None = None, env: dict[str, str] | None = None) -> float:
    t = time.perf_counter()
    with open(out or os.devnull, "w") as f:
        subprocess.run(cmd, stdout=f, check=True, env=env, cwd=tempfile.gettempdir())
    return time.perf_counter() - t


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "grid.json")
        cmd_s, floor_s, ratios, ref_s, ref_ratios = [], [], [], [], []
        ref_env = {**os.environ, "PYTHONPATH": REFERENCE} if REFERENCE else None
        for _ in range(ROUNDS):
            if REFERENCE:
                r = wall([sys.executable, "-m", "kvcalc", *ARGS], out + ".ref", ref_env)
            c = wall([KV, *ARGS], out)
            if REFERENCE:
                ref_s.append(r)
                ref_ratios.append(c / r)
            start = wall([sys.executable, "-c", "pass"])
            dumps = float(subprocess.run([sys.executable, "-c", DUMPS, out], capture_output=True, text=True, check=True).stdout)
            cmd_s.append(c)
            floor_s.append(start + dumps)
            ratios.append(c / (start + dumps))
        size = os.path.getsize(out)
    print(f"kvcalc {' '.join(ARGS)}: {size / 1e6:.1f} MB")
    print(f"  command           median {statistics.median(cmd_s):.2f} s  (rounds: {', '.join(f'{x:.2f}' for x in cmd_s)})")
    print(f"  floor             median {statistics.median(floor_s):.2f} s  (python start-up + json.dumps of the same document)")
    print(f"  command / floor   median {statistics.median(ratios):.2f}x  (rounds: {', '.join(f'{x:.2f}' for x in ratios)})")
    if REFERENCE:
        print(
            f"  reference         median {statistics.median(ref_s):.2f} s  ({REFERENCE}; rounds: {', '.join(f'{x:.2f}' for x in ref_s)})"
        )
        print(f"  command / reference median {statistics.median(ref_ratios):.2f}x")


if __name__ == "__main__":
    main()
