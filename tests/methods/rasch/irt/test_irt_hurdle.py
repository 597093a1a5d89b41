"""The hurdle model keeps "asks more questions of a group" apart from "denies a group more":
recovery of planted effects on each step (real nutpie sampling, short: slow), and its cells."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from audit.methods.rasch.config import FitConfig
from audit.methods.rasch.irt import fit_rasch
from audit.methods.rasch.irt.hurdle import ABSTAINED_OUTCOME, DECIDED_OUTCOME, hurdle_data
from audit.methods.rasch.report.reading import contrast_sentence

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import persona_frame  # noqa: E402

# Black personas abstained on far more often; once decided, treated like everyone else.
ABSTAIN_EFFECT = {"Black": 1.0, "White": -0.5}
DECIDE_EFFECT = {"Asian": 0.4, "Hispanic": -0.4}


def simulate_labels(items: int, replicates: int, seed: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    personas = persona_frame(2)
    b_abstain = rng.normal(0.5, 0.5, items)  # abstention is the rarer event (about 35%)
    b_decide = rng.normal(0.0, 1.0, items)
    rows = []
    for persona in personas.iter_rows(named=True):
        race = persona["race"]
        for item in range(items):
            p_abstain = 1 / (1 + np.exp(-(ABSTAIN_EFFECT.get(race, 0.0) - b_abstain[item])))
            p_favour = 1 / (1 + np.exp(-(DECIDE_EFFECT.get(race, 0.0) - b_decide[item])))
            for _ in range(replicates):
                abstains, favours = rng.random(2) < (p_abstain, p_favour)
                label = (("needs_more_information" if rng.random() < 0.7 else "refusal")
                         if abstains else ("favourable" if favours else "unfavourable"))
                rows.append({"respondent": persona["persona_id"], "item": f"i{item:02d}",
                             "y": int(label == "favourable"), "label": label,
                             "model_name": "m1", "persona_kind": persona["persona_kind"],
                             "gender": persona["gender"], "race": race})
    return pl.DataFrame(rows).with_columns(pl.col("gender", "race").cast(pl.String))


def test_steps_see_the_right_answers():
    outcomes = pl.DataFrame({"respondent": ["r1"] * 4 + ["r2"] * 2, "item": ["i1"] * 6,
                             "y": [1, 0, 0, 0, 0, 0],
                             "label": ["favourable", "unfavourable", "refusal",
                                       "needs_more_information", "refusal", "refusal"]})
    abstention, decision = hurdle_data(outcomes)
    # Every answer counts for the first step; only r1's two decided answers for the second, and
    # r2, who never decided, gets no cell rather than a cell of zero trials.
    assert abstention.trials.tolist() == [4, 2] and abstention.successes.tolist() == [2, 2]
    assert decision.cell_respondent.tolist() == [0]
    assert decision.trials.tolist() == [2] and decision.successes.tolist() == [1]


def _race(contrasts: pl.DataFrame, a: str, b: str) -> dict:
    return contrasts.filter((pl.col("attribute") == "race") & (pl.col("level_a") == a)
                            & (pl.col("level_b") == b)).row(0, named=True)


@pytest.mark.slow
def test_hurdle_recovers_effects_on_each_step():
    outcomes = simulate_labels(items=12, replicates=12, seed=71)
    fit = fit_rasch(outcomes, FitConfig(model="hurdle", draws=500, tune=500, chains=2, seed=9))
    assert fit.diagnostics.rhat_max < 1.02, fit.diagnostics
    assert fit.outcome == DECIDED_OUTCOME
    (abstained,) = fit.companions
    assert abstained.outcome == ABSTAINED_OUTCOME
    # Abstention: Black minus White is 1.5 logits; the decision step has no Black/White gap.
    asks = _race(abstained.contrasts, "Black", "White")
    assert asks["decision"] == "different" and asks["hdi_low"] <= 1.5 <= asks["hdi_high"], asks
    denies = _race(fit.contrasts, "Black", "White")
    assert denies["hdi_low"] <= 0.0 <= denies["hdi_high"], denies
    # Decision step: Asian minus Hispanic is 0.8; the abstention step has none.
    decides = _race(fit.contrasts, "Asian", "Hispanic")
    assert decides["hdi_low"] <= 0.8 <= decides["hdi_high"] and decides["hdi_low"] > 0, decides
    quiet = _race(abstained.contrasts, "Asian", "Hispanic")
    assert quiet["hdi_low"] <= 0.0 <= quiet["hdi_high"], quiet
    # The favourable coding, where abstaining counts as a denial, misreads the abstention gap as
    # Black personas being denied more: the claim the hurdle model keeps apart.
    coded = fit_rasch(outcomes, FitConfig(model="rasch", draws=500, tune=500, chains=2, seed=9))
    assert _race(coded.contrasts, "Black", "White")["hdi_high"] < 0


def test_an_abstention_gap_is_not_read_as_a_favourability_gap():
    row = {"model_name": "m1", "attribute": "race", "level_a": "Black", "level_b": "White",
           "mean": 1.2, "hdi_low": 0.8, "hdi_high": 1.6, "rope_low": -0.18, "rope_high": 0.18,
           "p_direction": 1.0, "decision": "different"}
    asked = contrast_sentence({**row, "outcome": ABSTAINED_OUTCOME}, 0.94)
    assert "abstained" in asked and "more often for Black personas" in asked
    assert "favourably" not in asked
    decided = contrast_sentence({**row, "outcome": DECIDED_OUTCOME}, 0.94)
    assert "once the model decided, Black personas were treated more favourably" in decided
