"""The fit stage with the hurdle model and with judge error: what it fits, writes and reads back.

Sampling is replaced by prior draws (as in test_fit_outputs.py): these tests are about the
stage's wiring, not about the posterior.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import integrate, stats

import audit.methods.rasch.irt.rasch as rasch
from audit.errors import AuditError
from audit.methods.configs import AuditConfig
from audit.methods.rasch.config import FitConfig
from prior_samplers import prior_sampler
from audit.methods.rasch.irt.hurdle import ABSTAINED_OUTCOME, DECIDED_OUTCOME
from audit.methods.rasch.analyse import read_fit, write_fit
from audit.methods.rasch.analyse import fit_stage

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import abstaining_audit_tables  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")


@pytest.fixture
def tables(monkeypatch) -> tuple[pl.DataFrame, pl.DataFrame]:
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    return abstaining_audit_tables()


GOLD = pl.DataFrame({"true_label": ["favourable"] * 5 + ["unfavourable"] * 5,
                     "label": ["favourable"] * 4 + ["unfavourable"] * 5 + ["favourable"]})


def test_hurdle_fits_both_steps_and_reads_them_back(tables, tmp_path):
    prompts, labels = tables
    cfg = AuditConfig(fit=FitConfig(model="hurdle", chains=1))
    fit = fit_stage(cfg, prompts, labels, GOLD)  # with gold, hurdle still reads labels as truth
    assert [step.outcome for step in fit.all_fits()] == [DECIDED_OUTCOME, ABSTAINED_OUTCOME]
    assert fit.judge_confusion is None
    assert {"theta", "theta_abstain"} <= set(fit.idata.posterior.data_vars)
    # Catches the abstention step's contrasts being read from the decision step's posterior.
    decided, abstained = (step.contrasts.get_column("mean") for step in fit.all_fits())
    assert decided.len() == abstained.len() > 0 and not decided.equals(abstained)
    write_fit(fit, tmp_path)
    contrasts = pl.read_csv(tmp_path / "contrasts.csv")
    assert set(contrasts["outcome"]) == {DECIDED_OUTCOME, ABSTAINED_OUTCOME}
    again = read_fit(tmp_path, cfg.fit)
    assert again.outcome == DECIDED_OUTCOME and again.companions[0].outcome == ABSTAINED_OUTCOME
    assert again.all_contrasts().sort(contrasts.columns[:5]).equals(
        contrasts.sort(contrasts.columns[:5]))


def test_judge_error_is_on_by_default_when_gold_results_exist(tables, tmp_path):
    prompts, labels = tables
    fit = fit_stage(AuditConfig(fit=FitConfig(chains=1)), prompts, labels, GOLD)
    counts = fit.judge_confusion.by_path["any"]  # the gold results do not say which path
    assert (counts.true_1_judged_1, counts.true_1_judged_0) == (4, 1)
    assert (counts.true_0_judged_0, counts.true_0_judged_1) == (4, 1)
    sensitivity = fit.idata.posterior["judge_sensitivity"].values
    # Latin hypercube draws of Beta(5, 2), one per imputation, held fixed within each.
    assert sensitivity.shape[0] == FitConfig().judge_imputations
    assert np.isclose(sensitivity.mean(), 5 / 7, atol=0.05)
    assert fit.summary.filter(pl.col("parameter") == "judge_specificity[any]").height == 1
    write_fit(fit, tmp_path)
    recorded = json.loads((tmp_path / "diagnostics.json").read_text())["judge_error"]
    assert recorded["favourable"]["paths"]["any"]["true_1_judged_0"] == 1


# Rules perfect on their 6 gold answers, the judge model 2 of 4 right on its own.
GOLD_BY_PATH = pl.DataFrame({
    "true_label": ["favourable"] * 3 + ["unfavourable"] * 3 + ["favourable"] * 2
    + ["unfavourable"] * 2,
    "label": ["favourable"] * 3 + ["unfavourable"] * 3 + ["favourable", "unfavourable",
                                                          "unfavourable", "favourable"],
    "label_source": ["rule"] * 6 + ["judge"] * 4})


def _mean_better_than_coin(sensitivity: tuple, specificity: tuple) -> float:
    """E[sensitivity | sensitivity + specificity > 1] under independent Betas, by quadrature."""
    def mass(weight):
        return integrate.dblquad(lambda p, s: weight(s) * stats.beta.pdf(s, *sensitivity)
                                 * stats.beta.pdf(p, *specificity), 0, 1, lambda s: 1 - s, 1)[0]
    return mass(lambda s: s) / mass(lambda s: 1.0)


def test_each_path_gets_the_rates_of_its_own_gold_answers(tables, tmp_path):
    # Fails when the paths share one matrix (the rules blamed for the judge's errors) or when
    # the gold answers of one path count for the other.
    prompts, labels = tables
    labels = labels.with_row_index("row").with_columns(label_source=pl.when(
        pl.col("row") % 4 == 0).then(pl.lit("judge")).otherwise(pl.lit("rule"))).drop("row")
    fit = fit_stage(AuditConfig(fit=FitConfig(chains=1, judge_imputations=8)), prompts, labels,
                    GOLD_BY_PATH)
    rule, judge = fit.judge_confusion.by_path["rule"], fit.judge_confusion.by_path["judge"]
    assert (rule.true_1_judged_1, rule.true_1_judged_0, rule.true_0_judged_0) == (3, 0, 3)
    assert (judge.true_1_judged_1, judge.true_1_judged_0, judge.true_0_judged_1) == (1, 1, 1)
    rates = fit.idata.posterior["judge_sensitivity"]
    assert list(rates["label_path"].values) == ["judge", "rule"]
    # Beta(4, 1) for the rules, Beta(2, 2) for the judge, each given sensitivity + specificity
    # > 1 (which lifts the judge's, its specificity being a wide Beta too); 8 stratified draws.
    assert np.isclose(float(rates.sel(label_path="rule").mean()), 0.8, atol=0.05)
    assert np.isclose(float(rates.sel(label_path="judge").mean()),
                      _mean_better_than_coin(*judge.rate_betas()), atol=0.05)
    write_fit(fit, tmp_path)
    recorded = json.loads((tmp_path / "diagnostics.json").read_text())["judge_error"]
    assert set(recorded["favourable"]["paths"]) == {"judge", "rule"}


def test_judge_error_off_or_missing_gold(tables):
    prompts, labels = tables
    off = fit_stage(AuditConfig(fit=FitConfig(chains=1, judge_error=False)), prompts, labels,
                    GOLD)
    assert off.judge_confusion is None
    assert "judge_sensitivity" not in off.idata.posterior
    with pytest.raises(AuditError, match="judge.evaluate_on_gold"):
        fit_stage(AuditConfig(fit=FitConfig(chains=1, judge_error=True)), prompts, labels, None)


def test_the_fit_stage_fits_no_second_coding_under_the_hurdle(tables):
    """Bug caught: fit.second_outcome under fit=hurdle (refused at design, but reachable by a
    params.yaml edited before `dvc repro` reruns the analyse stage alone) fitted a third model
    beside the hurdle's two steps."""
    prompts, labels = tables
    cfg = AuditConfig(fit=FitConfig(model="hurdle", second_outcome="undetermined", chains=1))
    fit = fit_stage(cfg, prompts, labels)
    assert [step.outcome for step in fit.all_fits()] == [DECIDED_OUTCOME, ABSTAINED_OUTCOME]


def test_a_fit_with_no_decided_answer_is_one_line_naming_the_judge(tables):
    """Bug caught: labels without a single decision went on to the model, where they failed as
    an empty fit rather than as the one line naming the judge and the responses."""
    prompts, labels = tables
    undecided = labels.with_columns(label=pl.lit("unparseable"))
    with pytest.raises(AuditError, match=r"^no labelled responses to fit: every answer failed"):
        fit_stage(AuditConfig(fit=FitConfig(chains=1)), prompts, undecided)
