"""kvcalc's track record (kvcalc.engine.track): what it says, when it is printed, and that the text
and the JSON say the same. That track_data.py is the corpus's own figures is
tests/test_serving_accuracy.py::test_track_record_is_current."""

from __future__ import annotations

import dataclasses

import pytest

from kvcalc.engine import track
from kvcalc.engine.engines import engine
from kvcalc.engine.steptime import DEFAULTS, defaults_for
from kvcalc.engine.track import MetricRecord, for_estimate, group_of, track_record

GROUPS = {
    "moe/5+": {
        "mean_tpot": (60, -0.354, -0.479, -0.232),
        "output_throughput": (72, 0.363, 0.162, 0.666),
        "mean_ttft": (72, -0.531, -0.671, -0.343),
    },
    "dense/1": {"mean_tpot": (27, -0.01, -0.066, 0.09), "output_throughput": (4, 0.1, 0.0, 0.2)},
}


@pytest.fixture
def groups(monkeypatch):
    monkeypatch.setattr(track, "GROUPS", GROUPS)


@pytest.mark.parametrize(
    ("moe", "gpus", "key"),
    [(False, 1, "dense/1"), (False, 2, "dense/2-4"), (True, 4, "moe/2-4"), (True, 5, "moe/5+"), (False, 16, "dense/5+")],
)
def test_groups_are_model_kind_by_gpus_a_replica(moe, gpus, key):
    assert group_of(moe, gpus)[0] == key


def test_a_record_reads_as_its_figures(groups):
    rec = track_record(True, 8, ("mean_tpot", "output_throughput", "mean_ttft"))
    assert rec.kind == "mixture-of-experts models on more than 4 GPUs a replica"
    tpot, thr, ttft = rec.metrics
    # -0.354: 35.4% below; the quartiles -0.479 and -0.232: 23% to 48% below.
    assert tpot.describe() == "mean TPOT: 35% below measured at the median; middle half 23% to 48% below (60 runs)"
    assert thr.describe() == "output throughput: 36% above measured at the median; middle half 16% to 67% above (72 runs)"
    assert ttft.runs == 72 and ttft.median_error == -0.531


def test_a_spread_across_zero_and_a_median_at_zero(groups):
    m = MetricRecord("mean_tpot", 27, -0.004, -0.066, 0.09)
    assert m.describe() == "mean TPOT: at measured at the median; middle half 7% below to 9% above (27 runs)"


def test_too_few_runs_give_their_count_not_a_spread(groups):
    # dense/1 holds 4 throughput runs, under MIN_RUNS (5); a group with none holds 0.
    thr = track_record(False, 1).metrics[1]
    assert (thr.runs, thr.median_error) == (4, None)
    assert thr.describe() == "output throughput: 4 runs, too few to say"
    none = track_record(True, 2).metrics[0]
    assert (none.runs, none.median_error) == (0, None)


def test_only_the_default_constants_have_a_record(groups):
    v0 = engine("vllm@0.5")
    assert for_estimate(True, 8, DEFAULTS) is not None
    assert for_estimate(True, 8, defaults_for(v0), v0) is not None  # V0's own host costs are its defaults
    assert for_estimate(True, 8, DEFAULTS.with_efficiency(0.7)) is None
    assert for_estimate(True, 8, dataclasses.replace(DEFAULTS, fixed_s=1e-3, origin="calibration c.json")) is None
    assert for_estimate(True, 8, None) is None


def _percent(x: float) -> str:
    return f"{abs(x):.0%}"


@pytest.mark.parametrize(
    "args",
    [
        ("roofline", "--model", "glm-4.6", "--gpu", "b200", "--tp", "8", "--batch", "1", "--seq", "2k"),
        ("simulate", "--model", "llama3.1-8b", "--gpu", "h100", "--requests", "100", "--rate", "5"),
        (
            "plan",
            "--model",
            "llama3.1-70b",
            "--gpus",
            "h100",
            "--rate",
            "5",
            "--prompt",
            "1000",
            "--output",
            "200",
            "--ttft",
            "1s",
            "--tpot",
            "50ms",
        ),
        ("plan", "--throughput", "--model", "llama3.1-70b", "--gpus", "b200", "--max-gpus", "8"),
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_the_record_is_printed_as_its_json_says_and_not_under_a_chosen_efficiency(cli, monkeypatch, args):
    monkeypatch.setenv("COLUMNS", "80")
    text = " ".join(cli(*args).out.split())
    rec = cli(*args, "--json").json()["track_record"]
    assert "Track record" in text and rec["kind"] in text
    for m in rec["metrics"]:
        lo, hi = sorted((_percent(m["lower_quartile_error"]), _percent(m["upper_quartile_error"])), key=lambda p: int(p[:-1]))
        assert f"{_percent(m['median_error'])} {'below' if m['median_error'] < 0 else 'above'} measured" in text
        assert f"({m['runs']} runs)" in text and lo in text and hi in text
    assert "Track record" not in cli(*args, "--efficiency", "0.7").out
    assert cli(*args, "--efficiency", "0.7", "--json").json()["track_record"] is None
