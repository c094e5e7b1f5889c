"""Wall time of `kvcalc plan` on a fixed set of questions, against a reference checkout.

Usage: python bench/plan.py [REFERENCE [rounds]]
  REFERENCE   a checkout of another kvcalc release (e.g. `git worktree add /tmp/ref 7d71e66`): each question is
              then timed for it and for this one, alternately, in `rounds` rounds (default 2), and the median
              of each one's times and their ratio (this / reference) are printed. Each run is a fresh process
              (`python -m kvcalc plan ...`, its start-up included), as a user runs it.
Without REFERENCE, this checkout alone, `rounds` rounds.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

QUESTIONS = [
    "--model llama3.1-70b --rate 10 --prompt 1000 --output 200 --tpot 50ms --ttft 2s",
    "--model llama3.1-70b --rate 10 --prompt 1000 --output 200 --tpot 50ms --ttft 2s --engine sglang",
    "--model qwen3-32b --gpus h200 --max-gpus 8 --throughput --prompt 4000 --output 1000 --tpot 30ms --ttft 2s",
    "--model llama3.1-8b --rate 500 --prompt 100 --output 100 --tpot 30ms --ttft 1s --engine sglang",
    "--model llama3.1-8b --rate 2000 --prompt 20 --output 20 --tpot 50ms --ttft 2s --engine sglang",
    "--model llama3.1-8b --rate 200 --prompt 20 --output 200 --tpot 50ms --ttft 2s",
]


def once(root: str, question: str) -> float:
    env = dict(os.environ, PYTHONPATH=root)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "kvcalc", "plan", *question.split()], cwd=root, env=env, check=True, capture_output=True
    )
    return time.perf_counter() - t


def main() -> None:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ref = sys.argv[1] if len(sys.argv) > 1 else None
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    for q in QUESTIONS:
        mine, theirs = [], []
        for _ in range(rounds):
            mine.append(once(here, q))
            if ref:
                theirs.append(once(ref, q))
        line = f"{statistics.median(mine):6.2f} s"
        if ref:
            line += f"  ref {statistics.median(theirs):6.2f} s  ratio {statistics.median(mine) / statistics.median(theirs):.2f}"
        print(f"{line}  plan {q}", flush=True)


if __name__ == "__main__":
    main()
