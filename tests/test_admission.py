"""SGLang's admission reserve as a part of its own (kvcalc.engine.simulate.admission.Reserve): each question the
scheduler asks it, answered by hand or by a plain loop over the steps (the rules: TokenRatio, read from SGLang's
scheduler.py, schedule_policy.py and schedule_batch.py, cited there)."""

import pytest
from hypothesis import given, settings, strategies as st

from kvcalc.engine.engines import SGLANG_TOKEN_RATIO, SGLANG_TOKEN_RATIO_047, TokenRatio
from kvcalc.engine.simulate.admission import Reserve

DECAY = (0.7 - 0.7 * 0.14) / 600  # SGLang's default: from 0.7 to 0.7 x 0.14 = 0.098 over 600 decode steps


def test_the_claim_is_each_running_requests_outputs_to_come_clipped_at_4096_times_the_ratio():
    r = Reserve(SGLANG_TOKEN_RATIO)
    r.add(0, 100, 0)  # 100 outputs to come when it starts decoding at step 0
    r.add(1, 5000, 0)  # 5,000: more than the clip, kept apart
    r.add(2, 300, 0)
    r.drop(2, 300)  # it ended (or was retracted): no longer claimed
    # At step 10: 90 to come, and min(4,990, 4,096); the ratio has fallen ten steps.
    assert r.outputs_left(10) == 90 + 4096
    assert r.ratio_at(10) == pytest.approx(0.7 - 10 * DECAY, rel=1e-12, abs=0)
    # The requests whose prompts still run claim their outputs too, clipped alike: 5,000 -> 4,096, and 7.
    assert r.claim(10, [5000, 7]) == pytest.approx((0.7 - 10 * DECAY) * (90 + 4096 + 4096 + 7), rel=1e-12, abs=0)
    # 1,000 steps on the ratio is at its floor, 0.098; the short request ended at step 100 and is dropped.
    r.drop(0, 100)
    assert r.claim(1000) == pytest.approx(0.098 * 4000, rel=1e-12, abs=0)
    r.drop(1, 5000)
    assert r.outputs_left(1000) == 0 and r.long == {}


def test_the_ratio_returns_to_its_start_when_idle_and_is_recomputed_after_a_retraction():
    r = Reserve(SGLANG_TOKEN_RATIO)
    assert r.ratio_at(300) == pytest.approx(0.7 - 300 * DECAY, rel=1e-12, abs=0)
    r.idle(300)
    assert r.ratio_at(300) == 0.7 and r.ratio_at(301) == pytest.approx(0.7 - DECAY, rel=1e-12, abs=0)
    # Three requests left, 50 outputs made of 1,000 asked: (50 + 20 x 3) / 1,000 = 0.11 at that step.
    r.retracted(50, 3, 1000, 400)
    assert r.ratio_at(400) == pytest.approx(0.11, rel=1e-12, abs=0)
    # Below the floor it rises to the floor at the next step (each step takes max(ratio - decay, floor)).
    r.retracted(10, 1, 1000, 500)
    assert r.ratio_at(500) == pytest.approx(0.03, rel=1e-12, abs=0)
    assert r.ratio_at(501) == pytest.approx(0.098, rel=1e-12, abs=0)


def brute_turn(r: Reserve, span: int, step: int, fin: dict[int, int], free: int) -> int:
    """The first step k of the span after which the held request fits, step by step: the free tokens less a token a
    decoding request a step, less the ratio after k steps times the outputs still to come, each clipped."""
    for k in range(1, span + 1):
        left = sum(min(f - step - k, r.clip) for f in fin.values())
        ratio = max(r.start - r.ratio.decay * (step + k - r.at_step), r.ratio.floor)
        if r.wait < free - len(fin) * k - ratio * left:
            return k
    return span + 1


def test_the_step_the_falling_claim_lets_a_held_request_in_by_hand():
    r = Reserve(SGLANG_TOKEN_RATIO)
    r.add(0, 10_000, 0)  # one request with 10,000 outputs to come: its claim is the clip, 4,096, all span long
    r.wait = 200
    # After k steps: 3,000 - k tokens free, the claim (0.7 - k x DECAY) x 4,096 = 2,867.2 - 4.10965k, so the room
    # left is 132.8 + 3.10965k: 198.10 at k = 21 (not above 200), 201.21 at k = 22.
    assert 3000 - 21 - (0.7 - 21 * DECAY) * 4096 < 200 < 3000 - 22 - (0.7 - 22 * DECAY) * 4096
    assert r.turn(100, 0, {0: 10_000}, 3000) == 22
    # Where the request never fits inside the span: span + 1.
    assert r.turn(21, 0, {0: 10_000}, 3000) == 22
    r.wait = 2000
    assert r.turn(100, 0, {0: 10_000}, 3000) == 101


@settings(max_examples=300, deadline=None)
@given(
    lasts=st.lists(st.integers(1, 9000), min_size=1, max_size=8),
    step=st.integers(0, 2000),
    span=st.integers(1, 400),
    start=st.floats(0.01, 1.0),
    since=st.integers(0, 900),
    wait=st.integers(1, 20000),
    free=st.integers(0, 40000),
)
def test_the_turn_is_the_first_step_a_plain_loop_finds(lasts, step, span, start, since, wait, free):
    r = Reserve(SGLANG_TOKEN_RATIO)
    r.start, r.at_step = start, max(step - since, 0)
    fin = {}
    for i, d in enumerate(lasts):
        f = step + span + d  # none ends inside the span
        fin[i] = f
        r.add(i, f, step)
    r.wait = wait
    assert r.turn(span, step, fin, free) == brute_turn(r, span, step, fin, free)


def test_the_ignore_eos_list_is_sorted_and_later_requests_go_in_as_sglangs_insert_sort_puts_them():
    # At the first try: the one asked about and the running requests with outputs to come, by outputs to come;
    # a running request with none to come is left out.
    assert Reserve.eos_order((7, 100), [(3, 50), (0, 40), (9, 60)]) == [(3, 50), (7, 100), (9, 60)]
    assert Reserve.eos_order(None, [(3, 50), (9, 60)]) == [(3, 50), (9, 60)]
    states = [(5, 10), (10, 20)]
    # Before the first with as many to come.
    assert Reserve.eos_insert(states, 7, 1) == [(5, 10), (7, 1), (10, 20)]
    assert Reserve.eos_insert(states, 10, 1) == [(5, 10), (10, 1), (10, 20)]
    # More than all the others: before the last, not after it (SGLang's loop leaves its index at the last).
    assert Reserve.eos_insert(states, 20, 1) == [(5, 10), (20, 1), (10, 20)]
    assert Reserve.eos_insert([], 20, 1) == [(20, 1)]
    # None to come: not inserted.
    assert Reserve.eos_insert(states, 0, 1) is states


def test_the_ignore_eos_test_by_hand_in_both_versions():
    states = [(2, 10), (5, 20)]  # (outputs to come, tokens held)
    own = Reserve(SGLANG_TOKEN_RATIO, eos=True)
    # From 0.4.8 ('own'): the first to end needs rem - 2 x 2 > 2, so rem > 6; then rem + 10 - 5 > 1.
    assert own.eos_fits(states, 7) and not own.eos_fits(states, 6)
    assert own.eos_fits([(5, 20)], 7) and not own.eos_fits([(5, 20)], 6)  # 7 - 5 > 1; 6 - 5 = 1
    nxt = Reserve(SGLANG_TOKEN_RATIO_047, eos=True)
    # To 0.4.7.post1 ('next'): the first against the next one's outputs, rem - 5 x 2 > 0; the last its own.
    assert nxt.eos_fits(states, 11) and not nxt.eos_fits(states, 10)
    assert nxt.eos_fits([(5, 20)], 6) and not nxt.eos_fits([(5, 20)], 5)


def test_a_retraction_takes_the_fewest_outputs_then_the_longest_prompt_then_the_last():
    fin = {0: 50, 1: 60, 2: 60}  # last steps; at step 40 they have 10, 20 and 20 to come
    outputs = [100, 30, 30]  # made: 90, 10, 10
    assert Reserve.victim(fin, 40, outputs, [10, 25, 20]) == 1  # the longer prompt
    assert Reserve.victim(fin, 40, outputs, [10, 20, 20]) == 2  # a tie: the last in the batch
    assert Reserve.victim({2: 60, 1: 60, 0: 50}, 40, outputs, [10, 20, 20]) == 1  # (the batch's order, not the index)


def test_conservativeness_scales_the_start_the_reserve_takes():
    r = Reserve(SGLANG_TOKEN_RATIO.conservative(0.5))
    assert r.start == pytest.approx(0.35, rel=1e-12, abs=0)
    r2 = Reserve(TokenRatio().conservative(3))
    assert r2.start == 1.0  # at most 1
