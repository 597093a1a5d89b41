"""The fit stage's files: contrasts per outcome, diagnostics verdict, and a faithful read-back.

Sampling is replaced by draws from the prior (a stand-in, like pymc-marketing's test mock), since
these tests are about what the stage writes and reads, not about the posterior.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

import audit.methods.rasch.irt.rasch as rasch
from audit.methods.configs import AuditConfig
from audit.methods.rasch.config import FitConfig
from prior_samplers import prior_sampler
from audit.methods.rasch.analyse import read_fit, write_fit
from audit.methods.rasch.analyse import fit_stage

sys.path.insert(0, str(Path(__file__).parent))
from irt_simulation import simulate_audit  # noqa: E402

LABEL_OF = {1: "favourable", 0: "needs_more_information"}


@pytest.fixture
def tables() -> tuple[pl.DataFrame, pl.DataFrame]:
    outcomes = simulate_audit({}, items=4, replicates=2, null_count=3, seed=2).with_row_index(
        "row")
    prompts = outcomes.select(
        pl.format("p{}", "row").alias("prompt_id"), pl.col("respondent").alias("respondent_id"),
        pl.col("item").alias("item_id"), "model_name", "persona_kind", "gender", "race")
    labels = outcomes.select(pl.format("p{}", "row").alias("prompt_id"),
                             pl.col("y").replace_strict(LABEL_OF).alias("label"))
    return prompts, labels


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("model", ["rasch", "explanatory"])
def test_second_outcome_is_fitted_written_and_read_back(model, tables, tmp_path, monkeypatch):
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    prompts, labels = tables
    cfg = AuditConfig(fit=FitConfig(model=model, second_outcome="undetermined", chains=1))
    fit = fit_stage(cfg, prompts, labels)
    assert [companion.outcome for companion in fit.all_fits()] == ["favourable", "undetermined"]
    write_fit(fit, tmp_path)

    contrasts = pl.read_csv(tmp_path / "contrasts.csv")
    assert set(contrasts["outcome"]) == {"favourable", "undetermined"}
    assert set(contrasts["attribute"]) == {"gender", "race"}
    assert set(contrasts["decision"]) <= {"different", "equivalent", "undecided"}
    assert (tmp_path / "undetermined" / "posterior.nc").is_file()
    verdict = json.loads((tmp_path / "diagnostics.json").read_text())
    assert verdict["outcomes"] == ["favourable", "undetermined"]
    assert verdict["converged"] is False  # prior draws are no converged posterior
    assert "favourable:" in verdict["advice"] and "undetermined:" in verdict["advice"]

    again = read_fit(tmp_path, cfg.fit)
    assert again.outcome == "favourable" and again.companions[0].outcome == "undetermined"
    assert again.all_contrasts().sort(contrasts.columns[:5]).equals(
        contrasts.sort(contrasts.columns[:5]))


def test_unknown_attribute_is_a_one_line_error(tables, monkeypatch):
    from audit.errors import AuditError

    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    prompts, labels = tables
    cfg = AuditConfig(fit=FitConfig(attributes=["age_band"]))
    with pytest.raises(AuditError, match="fit.attributes names \\['age_band'\\]"):
        fit_stage(cfg, prompts, labels)


def test_an_adaptive_runs_fit_keeps_the_pool_its_looks_fitted(tables, monkeypatch):
    """Bug caught (adaptive review 2026-12-02): the looks of an adaptive run fit over the
    design's pool of cells, the analyse stage without it, so a persona text whose answers were
    all unlabelled (failed, unparseable, dropped) left the published fit: its contrasts moved
    from those of the look that stopped the run. A fixed run's fit leaves it out, as before."""
    from audit.config import DesignConfig

    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    prompts, labels = tables
    silent = prompts.filter(pl.col("persona_kind") != "null")["respondent_id"].unique().sort()[0]
    unlabelled = labels.join(prompts.filter(pl.col("respondent_id") == silent)
                             .select("prompt_id"), on="prompt_id", how="anti")

    def respondents(adaptive: bool) -> set[str]:
        cfg = AuditConfig(fit=FitConfig(chains=1), design=DesignConfig(adaptive=adaptive))
        fit = fit_stage(cfg, prompts, unlabelled)
        return {str(name) for name in fit.idata.posterior["theta"]["respondent"].values}

    assert silent in respondents(adaptive=True)
    assert silent not in respondents(adaptive=False)


def test_labels_of_prompts_the_prompts_table_lacks_are_left_out(tables):
    """Bug caught: a left join kept a label whose prompt the prompts table lacks, a row without
    respondent or item for the fit to read."""
    from audit.methods.rasch.analyse import outcome_table

    prompts, labels = tables
    stray = pl.concat([labels, pl.DataFrame({"prompt_id": ["gone"], "label": ["favourable"]})])
    table = outcome_table(prompts, stray, ["gender", "race"])
    assert table.height == labels.height and table["respondent_id"].null_count() == 0


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_item_gaps_are_written_and_read_back(tables, tmp_path, monkeypatch):
    """Bugs caught: write_fit leaving item_gaps.csv out, or read_fit not reading it back, so the
    report of a fit.item_dif run had no item gaps."""
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    prompts, labels = tables
    cfg = AuditConfig(fit=FitConfig(model="population", item_dif=["race"], chains=1))
    fit = fit_stage(cfg, prompts, labels)
    assert fit.item_gaps.height
    write_fit(fit, tmp_path)
    again = read_fit(tmp_path, cfg.fit).item_gaps
    assert again.columns == fit.item_gaps.columns and again.height == fit.item_gaps.height
    for column, dtype in fit.item_gaps.schema.items():
        if dtype == pl.String:
            assert again[column].to_list() == fit.item_gaps[column].to_list()
        else:
            assert again[column].to_list() == pytest.approx(fit.item_gaps[column].to_list())


def test_an_audits_empty_no_signal_list_is_recorded_and_a_bare_fits_is_not(tables, tmp_path,
                                                                          monkeypatch):
    """Bug caught: an audit with signal (no reasons) wrote no `no_signal` at all, the record of a
    `python -m audit.fit` fit that was never checked for signal."""
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    prompts, labels = tables
    fit = fit_stage(AuditConfig(fit=FitConfig(chains=1)), prompts, labels)
    write_fit(fit, tmp_path / "audit", [])
    write_fit(fit, tmp_path / "bare")
    assert json.loads((tmp_path / "audit" / "diagnostics.json").read_text())["no_signal"] == []
    assert "no_signal" not in json.loads((tmp_path / "bare" / "diagnostics.json").read_text())


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_a_fit_written_where_another_was_leaves_none_of_the_earlier_tables(tables, tmp_path,
                                                                          monkeypatch):
    """Bug caught (bad-input review 2026-12-06): a fit with no item gaps written into a folder
    that held another fit's item_gaps.csv left it beside the new posterior, to be read as its
    own (`audit.fit output=` an earlier fit's folder)."""
    monkeypatch.setattr(rasch, "sample_with_nutpie", prior_sampler)
    prompts, labels = tables
    cfg = AuditConfig(fit=FitConfig(model="population", item_dif=["race"], chains=1))
    write_fit(fit_stage(cfg, prompts, labels), tmp_path)
    assert (tmp_path / "item_gaps.csv").is_file()
    plain = AuditConfig(fit=FitConfig(model="population", chains=1))
    write_fit(fit_stage(plain, prompts, labels), tmp_path)
    assert not (tmp_path / "item_gaps.csv").exists()
    assert read_fit(tmp_path, plain.fit).item_gaps.is_empty()
