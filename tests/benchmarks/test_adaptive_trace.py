"""benchmarks/adaptive_trace.py: where a replayed rule stops a traced run, and what it counts."""

from __future__ import annotations

import polars as pl
import pytest

BUDGET = 252


@pytest.fixture(scope="module")
def trace(script):
    return script("adaptive_trace")


def _rows(look: int, prompts: int, contrasts: list[tuple[str, str, float, float | None, bool]],
          gap: float = 1.0, weight: float = 1.0) -> list[dict]:
    """Trace rows of one look: (levels, decision, mean, p_decidable, ci_fail) a contrast."""
    rows = []
    for levels, decision, mean, p, failed in contrasts:
        level_a, level_b = levels.split("/")
        truth = gap if (level_a, level_b) == ("Black", "White") else 0.0
        rows.append({"model_name": "m", "attribute": "race", "level_a": level_a,
                     "level_b": level_b, "decision": decision, "mean": mean, "gap": gap,
                     "audit": 0, "look": look, "prompts": prompts, "weight": weight,
                     "ci_fail": failed, "truth": truth, "p_decidable": p, "seed": 1,
                     "budget": BUDGET})
    return rows


def _looks(p_at_half: float) -> pl.DataFrame:
    """A run whose one open contrast has P(decidable) 0.1 at a quarter of the budget and
    ``p_at_half`` at half, and is decided `different` (positive) at three quarters; the fixed
    design decides it too."""
    fixed = [("Black/White", "different", 1.4, None, True),
             ("Asian/White", "undecided", 0.2, None, False)]
    looks = [(0, 63, [("Black/White", "undecided", 0.9, 0.1, False),
                      ("Asian/White", "undecided", 0.1, 0.01, False)]),
             (1, 126, [("Black/White", "undecided", 1.0, p_at_half, False),
                       ("Asian/White", "undecided", 0.1, 0.01, False)]),
             (2, 189, [("Black/White", "different", 1.3, 1.0, True),
                       ("Asian/White", "undecided", 0.2, 0.01, False)]),
             (3, 252, [("Black/White", "different", 1.4, 1.0, True),
                       ("Asian/White", "undecided", 0.2, 0.0, False)])]
    rows = _rows(-1, BUDGET, fixed)
    for look, prompts, contrasts in looks:
        rows += _rows(look, prompts, contrasts)
    return pl.DataFrame(rows)


def test_a_rule_stops_at_the_first_look_from_its_share_without_a_live_contrast(trace):
    """Bugs caught: futility judged before futility_from (a stop at the first look), a decided
    contrast counted as alive, or the last look stopped as `futile` instead of on the budget."""
    looks = _looks(p_at_half=0.15).filter(pl.col("look") >= 0)
    assert trace.stop_look(looks, BUDGET, 0.2, 0.5) == (1, "futile")
    # Kept alive at half the budget, decided at three quarters, where the other one is dead.
    assert trace.stop_look(looks, BUDGET, 0.1, 0.5) == (2, "futile")
    assert trace.stop_look(looks, BUDGET, 0.2, 0.75) == (2, "futile")
    alive_to_the_end = looks.with_columns(p_decidable=pl.lit(0.5))
    assert trace.stop_look(alive_to_the_end, BUDGET, 0.2, 0.5) == (3, "budget")
    assert trace.stop_look(looks, BUDGET, 0.2, 0.0) == (0, "futile")
    everything_decided = looks.with_columns(decision=pl.lit("different"))
    assert trace.stop_look(everything_decided, BUDGET, 0.2, 0.5) == (0, "decided")


def test_the_replay_counts_a_futility_stop_before_the_fixed_decision_as_a_loss(trace):
    """Bugs caught: agreement read at the trace's last look instead of the rule's stop, or the
    prompts share of the last look."""
    table = trace.replay(_looks(p_at_half=0.15), 0.2, 0.5)["table"].row(0, named=True)
    assert (table["fixed_decided"], table["agreed"], table["stop"]) == (1, 0, "futile")
    assert table["ratio"] == pytest.approx(0.5)
    assert (table["power_fixed"], table["power_adaptive"]) == (1.0, 0.0)
    kept = trace.replay(_looks(p_at_half=0.15), 0.1, 0.5)["table"].row(0, named=True)
    assert (kept["agreed"], kept["ratio"], kept["power_adaptive"]) == (1, 0.75, 1.0)


def test_a_different_of_the_wrong_sign_does_not_agree(trace):
    """Bug caught: two `different`s counted as agreeing whatever their signs."""
    frame = _looks(p_at_half=0.5).with_columns(
        mean=pl.when((pl.col("look") >= 2) & (pl.col("level_a") == "Black"))
        .then(-pl.col("mean")).otherwise(pl.col("mean")))
    row = trace.replay(frame, 0.2, 0.5)["table"].row(0, named=True)
    assert (row["fixed_decided"], row["agreed"], row["power_adaptive"]) == (1, 0, 0.0)


def test_the_weighted_median_weighs_each_value_by_its_sampling_weight(trace):
    """Bug caught: the median of the traced audits unweighted, so the every-audit sample of
    decided audits (mostly long runs) pulled the prompts share up."""
    import numpy as np

    assert trace.weighted_median(np.array([0.5, 1.0]), np.array([4.0, 1.0])) == 0.5
    assert trace.weighted_median(np.array([0.5, 1.0]), np.array([1.0, 4.0])) == 1.0
