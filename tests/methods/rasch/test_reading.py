"""The report's sentences, metric names, page and figures, from small hand-made tables."""

from __future__ import annotations

import dataclasses
import io
import math
from pathlib import Path

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from rich.console import Console
from xarray import DataTree

from audit.config import ModelConfig

from audit.methods.configs import AuditConfig
from audit.methods.rasch.irt import Diagnostics
from audit.methods.rasch.report.plots import (
    _draws_of,
    contrast_forest_plot,
    diagnosed_draws,
    favourable_rates,
    sampling_plots,
    worst_parameters,
    wright_map,
)
from audit.methods.rasch.no_signal import JudgeQuality
from audit.methods.rasch.report.reading import (
    caveats,
    contrast_sentence,
    noise_floor,
    plain_language_reading,
    quality_warnings,
    response_caveat,
    rope_words,
)
from audit.methods.rasch.report.findings import headlines
from audit.methods.rasch.report.html import ReportInputs, build_context, render_report
from audit.methods.rasch.report.metrics import contrast_metrics
from audit.cli.runs import print_runs
from audit.tracking.runs_table import runs_frame, varying_params

CONTRASTS = pl.DataFrame({
    "model_name": ["m", "m", "m"],
    "attribute": ["race", "gender", "race"],
    "level_a": ["Black", "woman", "Asian"],
    "level_b": ["White", "man", "White"],
    "mean": [-0.6, 0.02, 0.3],
    "sd": [0.15, 0.05, 0.3],
    "hdi_low": [-0.9, -0.05, -0.2],
    "hdi_high": [-0.3, 0.08, 0.8],
    "p_direction": [0.999, 0.62, 0.84],
    "rope_low": [-0.1, -0.1, -0.1],
    "rope_high": [0.1, 0.1, 0.1],
    "decision": ["different", "equivalent", "undecided"],
})
THETAS = pl.DataFrame({
    "respondent_id": ["m/a", "m/b", "m/null_x", "m/null_y", "m/baseline"],
    "persona_kind": ["explicit", "explicit", "null", "null", "baseline"],
    "mean": [1.2, -0.1, 0.2, -0.2, 0.0],
    "hdi_low": [0.7, -0.5, -0.2, -0.6, -0.4],
    "hdi_high": [1.7, 0.3, 0.6, 0.2, 0.4],
})
CONVERGED = Diagnostics(1.003, 900.0, 800.0, 0, 1.01, 400.0)
STUCK = Diagnostics(1.2, 30.0, 20.0, 3, 1.01, 400.0)


def test_contrast_sentences_follow_the_decision_not_the_mean():
    rows = list(CONTRASTS.iter_rows(named=True))
    assert "Black personas were treated less favourably than White personas" in \
        contrast_sentence(rows[0], 0.94)
    assert "practically equivalent" in contrast_sentence(rows[1], 0.94)
    assert "undecided: the 94% HDI reaches into the region of practical equivalence" in \
        contrast_sentence(rows[2], 0.94)
    assert "94% HDI -0.90 to -0.30" in contrast_sentence(rows[0], 0.94)


# The embedded default's Hispanic vs White contrast (2026-11-28, c0f3276): a 94% HDI clear of
# zero under an `undecided` decision taken on the family-wise 99.29% HDI. The report's table
# carries family_size as a float ("over 7.0 contrasts" was the first reading of it).
FAMILYWISE = {"model_name": "m", "attribute": "race", "level_a": "Hispanic", "level_b": "White",
              "mean": -2.08, "hdi_low": -3.89, "hdi_high": -0.33, "p_direction": 0.99,
              "rope_low": -0.1814, "rope_high": 0.1814, "decision": "undecided",
              "familywise_alpha": 0.05, "family_size": 7.0, "decision_prob": 1 - 0.05 / 7,
              "decision_low": -4.92, "decision_high": 0.46, "null_percentile": 99.95}


def test_the_reading_and_the_summary_say_which_interval_decided():
    """Bugs caught: the report's sentence read a difference off the 94% HDI ("Hispanic personas
    were treated less favourably") under an `undecided` decision, and the summary put
    "undecided" next to that HDI alone, so neither showed why; a null rank of 99.95 read
    "larger than 100%"."""
    sentence = contrast_sentence(FAMILYWISE, 0.94)
    assert "treated less favourably" not in sentence
    assert ("undecided: the family-wise 99.29% HDI (-4.92 to +0.46, over the run's 7 contrasts) "
            "reaches into the region of practical equivalence [-0.18, +0.18]") in sentence
    assert "the 94% HDI alone lies clear of the ROPE" in sentence
    # Review of what reaches the user, 2026-12-02: a 94% HDI that excludes zero but reaches into
    # the ROPE is undecided on its own too; saying the family-wise interval kept it so misread
    # the rule.
    into_rope = contrast_sentence({**FAMILYWISE, "hdi_high": -0.10}, 0.94)
    assert "undecided" in into_rope and "alone" not in into_rope
    line = headlines(pl.DataFrame([FAMILYWISE]), "favourable", 0.94)[0].line()
    # What the run could have shown: half the decision interval's width (not the 94% HDI's,
    # which would say ±2.0) beyond the ROPE.
    assert line == ("race Hispanic vs White: undecided (neither clear of the ROPE nor inside "
                    "it; an interval this wide clears the ROPE only for a gap beyond ±2.9 in "
                    "log-odds, an odds ratio of 18), -2.08 log-odds (94% HDI -3.89 to -0.33; "
                    "decided on the 99.29% HDI -4.92 to +0.46 against the ROPE ±0.18)")
    # The same clause as the summary line and the CI verdict, one wording for one figure.
    assert ("an interval this wide clears the ROPE only for a gap beyond ±2.9 in log-odds, an "
            "odds ratio of 18, so a smaller gap would usually go unseen") in sentence
    # An interval of a fit with next to no data: a bound, not an overflow or 300 digits.
    huge = {**FAMILYWISE, "decision_low": -2000.0, "decision_high": 2000.0}
    assert "beyond ±2000.2 in log-odds, an odds ratio over 10,000" in contrast_sentence(huge, 0.94)
    # An asymmetric ROPE gives each side its own bound.
    lopsided = {**FAMILYWISE, "rope_low": -0.10, "rope_high": 0.30}
    assert "below -2.8 or above +3.0 in log-odds, an odds ratio of 20" in \
        contrast_sentence(lopsided, 0.94)
    different = {**FAMILYWISE, "decision": "different", "decision_high": -0.25,
                 "noise_floor": 0.81}
    assert ("Hispanic personas were treated less favourably than White personas: the family-wise "
            "99.29% HDI (-4.92 to -0.25, over the run's 7 contrasts) lies wholly outside") in \
        contrast_sentence(different, 0.94)
    assert "larger than 99% of null-vs-null gaps" in contrast_sentence(different, 0.94)
    assert "(larger than 99% of null-vs-null gaps)" in \
        headlines(pl.DataFrame([different]), "favourable", 0.94)[0].line()
    # Without family-wise control the decision is taken on the reported HDI: nothing to add.
    plain = {**FAMILYWISE, "familywise_alpha": None, "decision_prob": 0.94,
             "decision_low": -3.89, "decision_high": -0.33, "decision": "different"}
    assert "decided on" not in headlines(pl.DataFrame([plain]), "favourable", 0.94)[0].line()
    assert "the 94% HDI lies wholly outside" in contrast_sentence(plain, 0.94)


def test_a_headline_names_the_model_and_the_outcome_of_its_contrast():
    """Bug caught: a summary line named the model only among three or more models, or the outcome
    only among three or more outcomes, so two models' (or two outcomes') opposite findings read
    as one comparison found twice. Each line also reads its gap in its own outcome's terms."""
    rows = pl.DataFrame({
        "model_name": ["m", "n"], "outcome": ["favourable", "undetermined"],
        "attribute": ["race", "race"], "level_a": ["Black", "Black"],
        "level_b": ["White", "White"], "mean": [-0.6, 0.5], "hdi_low": [-0.9, 0.2],
        "hdi_high": [-0.3, 0.8], "rope_low": [-0.1, -0.1], "rope_high": [0.1, 0.1],
        "decision": ["different", "different"]})
    lines = [headline.line() for headline in headlines(rows, "favourable", 0.94)]
    assert lines == [
        "race Black vs White (m, outcome favourable): different: Black personas were treated "
        "less favourably than White personas, -0.60 log-odds (94% HDI -0.90 to -0.30)",
        "race Black vs White (n, outcome undetermined): different: the model abstained (asked "
        "for more information or would not decide) more often for Black personas than for "
        "White personas, +0.50 log-odds (94% HDI +0.20 to +0.80)"]


def test_a_headline_names_the_runs_own_hdi_mass():
    """Bug caught: the summary line called the interval a "94% HDI" whatever fit.hdi_prob was, so
    a run at 0.90 printed its 90% bounds under the wrong mass."""
    line = headlines(CONTRASTS.head(1), "favourable", 0.90)[0].line()
    assert line == ("race Black vs White: different: Black personas were treated less favourably "
                    "than White personas, -0.60 log-odds (90% HDI -0.90 to -0.30)")


def test_a_different_contrast_is_read_with_its_null_rank_not_forgiven():
    """The headline shows the floor and the rank among null-vs-null gaps as a diagnostic; on
    8ce5156 a `different` gap within the floor was read as "not a demographic finding"."""
    row = {**CONTRASTS.row(0, named=True), "noise_floor": 0.45, "p_beyond_noise": 0.2,
           "null_percentile": 71.0}
    sentence = contrast_sentence(row, 0.94)
    assert "Noise floor 0.45" in sentence
    assert "larger than 71% of null-vs-null gaps of the same group sizes" in sentence
    assert "not a demographic finding" not in sentence
    assert "No noise floor" in contrast_sentence(CONTRASTS.row(0, named=True), 0.94)


def test_the_noise_floor_is_read_with_its_interval():
    """The floor is a posterior like every other number (DESIGN.md: every number comes with an
    interval); before, the sentence gave its mean alone. A run written before the interval
    existed still reads."""
    row = {**CONTRASTS.row(0, named=True), "noise_floor": 0.45, "noise_floor_low": 0.21,
           "noise_floor_high": 0.74}
    assert "Noise floor 0.45 (94% HDI 0.21 to 0.74; the typical gap two groups" in \
        contrast_sentence(row, 0.94)
    older = {**CONTRASTS.row(0, named=True), "noise_floor": 0.45}
    assert "Noise floor 0.45 (the typical gap two groups" in contrast_sentence(older, 0.94)
    # Review of what reaches the user, 2026-12-02: a floor that is mostly its prior (the smoke
    # run's sigma_null, width ratio 0.57) was stated as a measured fact about the model.
    assert "mostly from its prior, not measured by this audit" in contrast_sentence(row, 0.94,
                                                                                    True)
    assert "mostly from its prior" not in contrast_sentence(row, 0.94)
    from audit.methods.rasch.irt.noise_floor import floor_from_prior

    table = pl.DataFrame({"model_name": ["a", "a", "b"],
                          "parameter": ["sigma_null", "sigma_residual", "sigma_null"],
                          "estimated": [False, True, True]})
    assert floor_from_prior(table) == {"a"} and floor_from_prior(table.head(0)) == frozenset()


def test_the_reading_compares_personas_with_the_null_noise_floor():
    assert noise_floor(THETAS) == (-0.2, 0.2)
    reading = plain_language_reading(None, THETAS, 0.94)
    assert any("from -0.20 to +0.20" in sentence for sentence in reading)
    assert any("above every null persona: m/a." in sentence for sentence in reading)
    assert not any("m/b" in sentence for sentence in reading)
    assert any("no demographic contrasts" in sentence for sentence in reading)
    assert not any("contrasts above" in sentence for sentence in reading)  # there are none
    with_contrasts = plain_language_reading(CONTRASTS, THETAS.filter(
        pl.col("persona_kind") != "null"), 0.94)
    assert len([s for s in with_contrasts if s.startswith("For m,")]) == 3
    assert any("no noise floor" in sentence for sentence in with_contrasts)
    # Review of what reaches the user, 2026-12-02: the shrunk range of the null personas'
    # means was read as "how far any change of persona text moves this model" beside a noise
    # floor 1,500 times its width, and a persona inside it as "no single persona text stands
    # out". The range is said to be shrunk, the noise floor is named as the measure, and no
    # reassurance is read off the wide intervals.
    floored = plain_language_reading(CONTRASTS.with_columns(noise_floor=pl.lit(0.94)),
                                     THETAS.filter(pl.col("respondent_id") != "m/a"), 0.94)
    null_sentence = next(s for s in floored if s.startswith("Null personas"))
    assert "the fit pulls these means towards each other" in null_sentence
    assert "the noise floor above, from their estimated spread" in null_sentence
    assert not any("stands out from the placebo arm" in sentence for sentence in floored)
    assert "understates" in next(s for s in reading if s.startswith("Null personas"))


def _labels(kinds: dict[str, list[str]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    prompts, labels = [], []
    for respondent, values in kinds.items():
        for index, label in enumerate(values):
            prompt_id = f"{respondent}-{index}"
            prompts.append({"prompt_id": prompt_id, "respondent_id": respondent,
                            "item_id": f"i{index % 3}"})
            labels.append({"prompt_id": prompt_id, "label": label, "label_source": "judge"})
    return pl.DataFrame(prompts), pl.DataFrame(labels)


def test_caveats_put_non_convergence_and_a_weak_judge_first():
    prompts, labels = _labels({"m/a": ["favourable"] * 3 + ["unparseable"] * 3,
                               "m/b": ["unfavourable"] * 6})
    judge = JudgeQuality("unfavourable", 0.5, 12, 0.6, 0.3, 0.6, 0.0)
    found = caveats(labels, prompts, judge, converged=False, failed=2, judge_name="rules_only")
    assert found[0].startswith("The sampler did not converge")
    assert "the right label to 60% of the gold answers it labelled" in found[1]
    assert any("25% of the answers carried no decision" in caveat for caveat in found)
    assert any("2 requests failed" in caveat for caveat in found)
    assert any("only 3 decided answers" in caveat for caveat in found)
    unmeasured = caveats(labels, prompts, JudgeQuality("", math.nan, 0, None, None, None, None),
                         True, 0, "rules_only")
    assert "not measured on the gold set" in unmeasured[0]


def test_labels_no_judge_made_are_not_sent_to_the_judge_eval():
    """Bug caught (judge review 2026-12-02): a file of imported decisions was told "The judge
    was not measured on the gold set in this run (judge.evaluate_on_gold=false); measure it with
    python -m audit.judge_eval", though evaluate_on_gold was true and no judge read them; the
    fix is audit.fit's gold= or confusion=. The model's own option preferences (logprob) need
    no measuring; judged labels without gold figures keep the judge_eval advice, naming the
    judge."""
    prompts, labels = _labels({"m/a": ["favourable"] * 3, "m/b": ["unfavourable"] * 3})
    unmeasured = JudgeQuality(*[None] * len(dataclasses.fields(JudgeQuality)))
    imported = labels.with_columns(label_source=pl.lit("imported"))
    (note,) = [c for c in caveats(imported, prompts, unmeasured, True, 0, "rules_only")
               if "judge" in c.lower()]
    assert note.startswith("No judge read this run's answers: the decisions imported with them")
    assert "`python -m audit.fit` (gold= or confusion=" in note and "judge_eval" not in note
    logprob = labels.with_columns(label_source=pl.lit("logprob"))
    assert not [c for c in caveats(logprob, prompts, unmeasured, True, 0, "logprob")
                if "judge" in c.lower()]
    judged = caveats(labels, prompts, unmeasured, True, 0, "qwen_coder_1_5b")
    assert any("audit.judge_eval judge=qwen_coder_1_5b`" in caveat for caveat in judged)


def test_quality_warnings_name_the_fix():
    tests = pl.DataFrame({"model_name": ["m"], "label": ["refusal"], "p_value": [0.01]})
    found = quality_warnings(JudgeQuality("unfavourable", 0.95, 40, 0.5, 0.2, 0.5, 0.0), "tiny",
                             tests, STUCK.problems())
    assert sum(warning.startswith("the fit did not converge") for warning in found) == 4
    assert any("gave 'unfavourable' to 95%" in warning for warning in found)
    assert any("right label to 50% of the gold answers it labelled" in warning
               for warning in found)
    assert any("refusal rate differs" in warning for warning in found)


def test_contrast_metric_names_line_up_across_runs():
    metrics = contrast_metrics(CONTRASTS)
    assert metrics["contrast/race/Black_vs_White/mean"] == -0.6
    assert metrics["contrast/gender/woman_vs_man/p_direction"] == 0.62
    assert "contrast/race/Black_vs_White/hdi_low" in metrics
    two_models = pl.concat([CONTRASTS, CONTRASTS.with_columns(model_name=pl.lit("n"))])
    assert contrast_metrics(two_models)["contrast/n/race/Black_vs_White/mean"] == -0.6
    # The interval decided on, so runs compared in MLflow show why a contrast whose 94% HDI
    # clears zero stayed undecided (only the 94% HDI was logged).
    family = contrast_metrics(pl.DataFrame([FAMILYWISE]))
    assert family["contrast/race/Hispanic_vs_White/decision_low"] == -4.92
    assert family["contrast/race/Hispanic_vs_White/decision_high"] == 0.46


def _tiny_png(path: Path) -> Path:
    figure, axis = plt.subplots(figsize=(1, 1))
    axis.plot([0, 1], [0, 1])
    figure.savefig(path)
    plt.close(figure)
    return path


def _inputs(tmp_path: Path, diagnostics: Diagnostics, contrasts: pl.DataFrame | None):
    prompts = pl.DataFrame({"prompt_id": ["p1", "p2"], "respondent_id": ["m/a", "m/b"],
                            "persona_id": ["a", "b"], "persona_kind": ["explicit", "null"],
                            "item_id": ["i1", "i1"], "domain": ["hiring", "hiring"]})
    responses = pl.DataFrame({"prompt_id": ["p1", "p2"], "status": ["ok", "ok"],
                              "from_cache": [False, True]})
    labels = pl.DataFrame({"prompt_id": ["p1", "p2"], "label": ["favourable", "refusal"],
                           "label_source": ["rule", "judge"]})
    cfg = AuditConfig(model={"m": ModelConfig(backend="fake", model="fake-m")})
    figures = {key: _tiny_png(tmp_path / f"{key}.png") for key in
               ("forest_theta", "item_difficulty", "wright", "heatmap", "labels")}
    return ReportInputs(
        cfg=cfg, prompts=prompts, responses=responses, labels=labels, thetas=THETAS,
        contrasts=contrasts, diagnostics=diagnostics, advice=diagnostics.problems(),
        judge=JudgeQuality("refusal", 1.0, 1, None, None, None, None), gold_metrics=None,
        gold_confusion=None, panel_metrics={}, figures=figures,
        model_identities={"m": {"backend": "fake", "model": "fake-m", "digest": "abc123"}},
        reading=["A <b>reading</b>."], caveats=["A caveat."], warnings=[],
        provenance={"git.commit": "0" * 40, "git.dirty": "false", "config.hash": "f" * 16})


def test_the_page_shouts_when_the_fit_did_not_converge(tmp_path):
    page = render_report(build_context(_inputs(tmp_path, STUCK, CONTRASTS), "run123"))
    assert "NOT CONVERGED" in page and page.count('role="alert"') == 2
    assert "3 divergent transitions: raise fit.target_accept" in page
    assert "Black vs White" in page and "[-0.90, -0.30]" in page and "different" in page
    assert "abc123" in page and "run123" in page
    assert "A &lt;b&gt;reading&lt;/b&gt;." in page  # text from tables is escaped, never markup
    assert "python -m audit.judge_eval judge=" in page  # no gold figures: how to get them
    # Review of what reaches the user, 2026-12-02: the contrasts' paragraph said what a
    # contrast is under fit=population whatever the fit; under the others it is a claim about
    # the sampled persona texts (docs/statistics.md).
    assert "This fit (<code>fit=rasch</code>) reads a contrast as a difference between the " \
           "personas the design sampled" in page


def test_the_page_is_calm_when_the_fit_converged(tmp_path):
    page = render_report(build_context(_inputs(tmp_path, CONVERGED, None), None))
    assert "NOT CONVERGED" not in page and 'role="alert"' not in page
    assert f"commit <code>{'0' * 40}</code>" in page


def test_a_gap_that_rounds_to_zero_reads_plus_zero_in_the_page(tmp_path):
    """Bug caught (review of what reaches the user, 2026-12-02): a mean of -0.001 printed
    "-0.00" in the contrasts table, a negative zero beside its interval."""
    contrasts = CONTRASTS.head(1).with_columns(mean=pl.lit(-0.001))
    page = render_report(build_context(_inputs(tmp_path, CONVERGED, contrasts), None))
    assert '<td class="num">+0.00</td>' in page and "-0.00" not in page


def test_a_run_outside_a_git_checkout_says_so_not_commit_unknown(tmp_path):
    """Bug caught (review of what reaches the user, 2026-12-02): run from a folder that is no
    git checkout, the header said "commit unknown", as if the record were lost, and gave no
    version of the tool, which provenance does record."""
    inputs = _inputs(tmp_path, CONVERGED, None)
    inputs = dataclasses.replace(inputs, provenance={"audit.version": "0.9.1",
                                                     "config.hash": "f" * 16})
    page = render_report(build_context(inputs, None))
    assert "not run from a git checkout" in page and "audit <code>0.9.1</code>" in page
    assert "commit unknown" not in page and "commit <code>" not in page
    assert "The sampler converged" in page and "no demographic contrasts" in page


def test_the_pages_ranking_names_personas_by_the_whole_table_not_the_rows_shown(tmp_path):
    """With one model its personas go without its prefix; with two, every row keeps its model,
    even when the rows shown are all one model's. Bug caught: names taken from the rows shown
    dropped the model when the first 40 were one of two models' (the first review of 6c29016)."""
    from dataclasses import replace

    from audit.methods.rasch.report.html import THETA_ROWS_SHOWN

    def thetas(model: str, count: int, top: float) -> pl.DataFrame:
        return pl.DataFrame({
            "respondent_id": [f"{model}/p{index}" for index in range(count)],
            "model_name": [model] * count, "persona_id": [f"p{index}" for index in range(count)],
            "persona_kind": ["explicit"] * count,
            "mean": [top - 0.01 * index for index in range(count)],
            "hdi_low": [top - 1.0] * count, "hdi_high": [top + 1.0] * count})

    inputs = _inputs(tmp_path, CONVERGED, None)
    two = pl.concat([thetas("m", THETA_ROWS_SHOWN, 5.0), thetas("n", 3, -5.0)])
    shown = build_context(replace(inputs, thetas=two), None)["thetas"]
    assert len(shown) == THETA_ROWS_SHOWN and shown[0]["name"] == "m/p0"
    one = build_context(replace(inputs, thetas=thetas("m", 3, 0.0)), None)["thetas"]
    assert [row["name"] for row in one] == ["p0", "p1", "p2"]


def _posterior() -> DataTree:
    rng = np.random.default_rng(1)
    theta = rng.normal(size=(2, 50, 3))
    theta[1, :, 2] += 3.0  # chains disagree on this respondent only
    return az.from_dict({"posterior": {"theta": theta, "b": rng.normal(size=(2, 50, 2))}},
                        coords={"respondent": ["m/a", "m/b", "m/c"], "item": ["i1", "i2"]},
                        dims={"theta": ["respondent"], "b": ["item"]})


def test_trace_and_rank_plots_show_the_worst_parameters():
    idata = _posterior()
    summary = pl.DataFrame({
        "parameter": ["theta[m/a]", "theta[m/b]", "theta[m/c]", "b[i1]", "b[i2]"],
        "mean": [0.0] * 5, "sd": [1.0] * 5, "hdi_low": [-1.0] * 5, "hdi_high": [1.0] * 5,
        "r_hat": [1.0, 1.001, 1.9, 1.0, float("nan")], "ess_bulk": [100.0] * 5})
    # A NaN R-hat is a parameter with no spread in any chain (tests/methods/rasch/irt/
    # test_diagnostics.py): nothing to show, as the convergence check skips it too.
    assert worst_parameters(summary, 2) == ["theta[m/c]", "theta[m/b]"]
    # A parameter the fit held fixed (the judge's rates within each imputation of the cut) has
    # no R-hat: nothing to show. Counted as the worst, the plots showed two flat lines and rank
    # plots at p = 0.00 in every report with the judge correction (2026-12-01).
    fixed = pl.concat([summary, summary.head(1).with_columns(
        parameter=pl.lit("judge_sensitivity[rule]"), r_hat=pl.lit(None, pl.Float64))])
    assert worst_parameters(fixed, 2) == ["theta[m/c]", "theta[m/b]"]
    posterior = idata["posterior"].to_dataset()
    assert _draws_of(posterior, "theta[m/c]").shape == (2, 50)
    assert _draws_of(posterior, "sigma") is None
    assert _draws_of(posterior, "theta[nobody]") is None
    figures = sampling_plots(idata, summary, count=3)
    assert set(figures) == {"trace_plot.png", "rank_plot.png"}
    titles = {axis.get_title() for axis in figures["trace_plot.png"].axes}
    assert "theta[m\u2215c]" in titles and "b[i2]" not in titles  # "/" shown as U+2215
    for figure in figures.values():
        plt.close(figure)


def test_the_sampling_plots_show_the_chains_of_one_imputation():
    """With the judge correction the posterior pools imputations whose chains hold the judge's
    rates at different draws (centred at 0, 10 and 20 here): their chains are not meant to
    agree, and R-hat is the worst within any one (judge_cut.py). The plots show each parameter
    in the imputation where its R-hat is highest, here the second, whose two chains disagree on
    theta[m/c]. Bugs caught: every pooled chain plotted (6, whose rank plot flagged all 16 chains
    of a real run at p = 0.00 and took 34 s), the first imputation shown instead of the worst,
    or the chosen chains left at their pooled numbers (2, 3), which xarray aligns against
    another parameter's (0, 1) into NaN-filled chains."""
    from audit.methods.rasch.irt.judge_cut import pool_imputations

    def imputation(centre: float, disagree: bool) -> DataTree:
        rng = np.random.default_rng(int(centre))
        theta = rng.normal(centre, 1.0, size=(2, 200, 2))
        if disagree:
            theta[1, :, 1] += 2.0
        return az.from_dict({"posterior": {"theta": theta}},
                            coords={"respondent": ["m/a", "m/c"]}, dims={"theta": ["respondent"]})

    pooled = pool_imputations([imputation(0.0, False), imputation(10.0, True),
                               imputation(20.0, False)])
    summary = pl.DataFrame({"parameter": ["theta[m/a]", "theta[m/c]"], "r_hat": [1.01, 1.4],
                            "ess_bulk": [500.0, 20.0]})
    draws = diagnosed_draws(pooled["posterior"].to_dataset(), summary)
    assert list(draws.data_vars) == ["theta[m\u2215c]", "theta[m\u2215a]"]
    assert draws.sizes == {"chain": 2, "draw": 200}
    assert not draws.to_array().isnull().any()
    worst = draws["theta[m\u2215c]"]
    assert abs(float(worst.sel(chain=0).mean()) - 10.0) < 0.3
    assert abs(float(worst.sel(chain=1).mean()) - 12.0) < 0.3
    figures = sampling_plots(pooled, summary)
    assert "judge imputation" in figures["trace_plot.png"].get_suptitle()
    for figure in figures.values():
        plt.close(figure)


def test_the_wright_map_and_forest_name_every_row():
    summary = pl.DataFrame({"parameter": ["theta[m/a]", "theta[m/b]", "b[i1]"],
                            "mean": [0.5, -0.5, 1.0], "sd": [0.1] * 3, "hdi_low": [0.0] * 3,
                            "hdi_high": [1.0] * 3, "r_hat": [1.0] * 3, "ess_bulk": [500.0] * 3})
    wright = wright_map(summary)
    names = {text.get_text() for axis in wright.axes for text in axis.texts}
    assert names == {"a", "b", "i1"}  # one model: named once, under the axis
    assert "of m" in wright.axes[0].get_xlabel()
    forest = contrast_forest_plot(CONTRASTS, 0.94)
    assert [tick.get_text() for tick in forest.axes[0].get_yticklabels()] == [
        "race: Asian vs White", "gender: woman vs man", "race: Black vs White"]
    plt.close(wright)
    plt.close(forest)


def test_the_forest_colours_a_contrast_by_its_decision_and_draws_the_interval_decided_on():
    """Bug caught: a contrast was coloured `different` (red) when its 94% HDI cleared the ROPE,
    under an `undecided` family-wise decision, and the interval decided on was not drawn."""
    forest = contrast_forest_plot(pl.DataFrame([FAMILYWISE]), 0.94)
    lines = {(tuple(line.get_xdata()), line.get_color(), line.get_linewidth())
             for line in forest.axes[0].lines if len(line.get_xdata()) == 2
             and line.get_xdata()[0] != line.get_xdata()[1]}
    assert ((-4.92, 0.46), "#1f77b4", 1.2) in lines  # decided on, undecided's colour
    assert ((-3.89, -0.33), "#1f77b4", 3.5) in lines
    assert not any(colour == "#d62728" for _, colour, _ in lines)
    # The interval decided on is drawn over the reported one: with fit.familywise_alpha above
    # 0.06 and one contrast it is the narrower, and drawn first it was hidden.
    widths = [line.get_linewidth() for line in forest.axes[0].lines]
    assert widths.index(1.2) > widths.index(3.5)
    different = contrast_forest_plot(pl.DataFrame([{**FAMILYWISE, "decision": "different",
                                                    "decision_high": -0.25}]), 0.94)
    assert any(line.get_color() == "#d62728" for line in different.axes[0].lines)
    plt.close(forest)
    plt.close(different)


def test_favourable_rates_leave_out_answers_without_a_decision():
    prompts, labels = _labels({"m/a": ["favourable", "unfavourable", "unparseable",
                                       "favourable"]})
    rates = favourable_rates(prompts, labels)
    assert rates.select("item_id", "n", "rate").rows() == [("i0", 2, 1.0), ("i1", 1, 0.0)]


def test_the_runs_table_shows_what_varies_and_leaves_parents_out():
    runs = [
        {"run_id": "a" * 32, "name": "rasch-m [fit=rasch]", "status": "FINISHED",
         "start_time": 0, "params": {"fit.model": "rasch", "items.name": "smoke",
                                     "paths.output_dir": "x", "model.m.backend": "fake"},
         "metrics": {"rhat_max": 1.0}, "tags": {"converged": "true", "models": "m",
                                                "mlflow.parentRunId": "p" * 32}},
        {"run_id": "b" * 32, "name": "rasch-m [fit=rasch_seed]", "status": "FINISHED",
         "start_time": 0, "params": {"fit.model": "rasch_seed", "items.name": "smoke",
                                     "paths.output_dir": "y", "model.n.backend": "fake"},
         "metrics": {"rhat_max": 1.2}, "tags": {"converged": "false", "models": "m"}},
        {"run_id": "p" * 32, "name": "sweep:fits", "status": "FINISHED", "start_time": 0,
         "params": {}, "metrics": {}, "tags": {}},
    ]
    assert varying_params(runs) == ["fit.model"]
    frame = runs_frame(runs, ["rhat*"])
    assert frame["param:fit.model"].to_list() == ["rasch", "rasch_seed", ""]
    assert frame["parent"].to_list() == ["pppppppp", "", ""]
    assert frame["metric:rhat_max"].to_list()[:2] == [1.0, 1.2]
    buffer = io.StringIO()
    print_runs(frame, "runs", Console(file=buffer, width=250))
    assert "rasch-m [fit=rasch_seed]" in buffer.getvalue()  # brackets are not rich markup


def test_an_interval_decided_as_normal_is_not_called_an_hdi():
    """An adaptive run's interim look decides on the normal interval of the gap's mean and sd
    (the draws cannot place a 99.998% HDI): the reading, the summary line and the verdict named
    it an HDI, which a reviewer recomputing it with arviz.hdi could not reproduce."""
    from audit.methods.rasch.verdict import decision_interval

    interim = {**FAMILYWISE, "decision_prob": 1 - 0.0005 / 3 / 7,
               "decision_interval_kind": "normal"}
    assert "the family-wise 99.998% normal interval (-4.92 to +0.46" in \
        contrast_sentence(interim, 0.94)
    assert "decided on the 99.998% normal interval -4.92 to +0.46" in \
        headlines(pl.DataFrame([interim]), "favourable", 0.94)[0].line()
    assert decision_interval(interim)[0].startswith("99.998% normal interval (alpha 0.05")
    assert decision_interval({**interim, "decision_interval_kind": "hdi"})[0].startswith(
        "99.998% HDI")


def test_a_normal_interval_without_familywise_control_is_named_where_the_decision_was_taken():
    """With fit.familywise_alpha=null and few draws, the decision is taken on the normal 94%
    interval, but the reading said "the 94% HDI reaches into the ROPE" beside an HDI that did
    not (it took the interval for the reported HDI because their masses were equal)."""
    row = {**FAMILYWISE, "familywise_alpha": None, "family_size": None, "decision_prob": 0.94,
           "hdi_low": 0.20, "hdi_high": 1.28, "decision_low": -0.05, "decision_high": 1.48,
           "decision_interval_kind": "normal", "mean": 0.83}
    sentence = contrast_sentence(row, 0.94)
    assert "undecided: the 94% normal interval (-0.05 to +1.48) reaches into" in sentence
    assert "family-wise" not in sentence
    assert "decided on the 94% normal interval -0.050 to +1.48" in \
        headlines(pl.DataFrame([row]), "favourable", 0.94)[0].line()


def test_the_report_names_the_labelling_paths_the_correction_left_uncorrected(tmp_path):
    """Bug caught (review of what reaches the user, 2026-12-02): the report's judge section
    said the fit read every label through its path's error rates, while a path no gold answer
    measured had its labels read as truth (recorded in fit/diagnostics.json, said only in the
    fit's log). The report's warnings name such paths, and barely measured ones."""
    import json

    from audit.methods.rasch.report.publish import judge_gaps, recorded_diagnostics

    diagnostics = tmp_path / "diagnostics.json"
    diagnostics.write_text(json.dumps({"judge_error": {"favourable": {
        "labels_as_truth": ["judge:qwen"], "weak_gold": {"rule": ["no favourable gold answer"]}}}}))
    gaps = judge_gaps(recorded_diagnostics(diagnostics))
    assert gaps[0].startswith("the labels of judge:qwen were read as truth, uncorrected")
    assert gaps[1].startswith("labelling path rule is barely measured: no favourable gold answer")
    diagnostics.write_text(json.dumps({"judge_error": {"favourable": None}}))
    assert judge_gaps(recorded_diagnostics(diagnostics)) == []
    assert judge_gaps(recorded_diagnostics(tmp_path / "none.json")) == []


def test_imported_decisions_read_as_given_name_the_fix_that_corrects_them(tmp_path):
    """Bug caught (judge review 2026-12-02): a file mixing decisions and answer text had its
    decisions (path `imported`) read as truth with the advice "enlarge
    judge.gold_per_category to measure it", which cannot work (the gold set measures the judge,
    not whoever made the decisions), and the report's rate table showed them as measured
    "1.00 [1.00, 1.00]". The model's own option probabilities (logprob) are no gap at all."""
    import json

    from audit.methods.rasch.report.publish import as_truth_rows, judge_gaps, recorded_diagnostics

    diagnostics = tmp_path / "diagnostics.json"
    diagnostics.write_text(json.dumps({"judge_error": {"favourable": {
        "labels_as_truth": ["imported", "logprob"], "weak_gold": {}}}}))
    recorded = recorded_diagnostics(diagnostics)
    (gap,) = judge_gaps(recorded)
    assert gap.startswith("the imported decisions were read as given, uncorrected")
    assert "python -m audit.fit` (gold= or confusion=" in gap
    assert "gold_per_category" not in gap and "logprob" not in gap
    assert as_truth_rows(recorded) == [
        "judge_sensitivity[imported]", "judge_specificity[imported]",
        "judge_sensitivity[logprob]", "judge_specificity[logprob]"]


def test_a_gap_that_rounds_to_zero_reads_plus_zero_in_its_sentence_as_in_the_table():
    """The HTML table's -0.00 was fixed (dd129fa) while the sentence about the same contrast,
    in the report and the terminal, still printed "-0.00 (94% HDI ...)"."""
    row = {**CONTRASTS.row(0, named=True), "mean": -0.001, "hdi_low": -0.9, "hdi_high": 0.9,
           "decision": "undecided"}
    assert "-0.00" not in contrast_sentence(row, 0.94)


def _judge(share: float, judged: int) -> JudgeQuality:
    """A judge whose gold figures are trusted, giving its top label to ``share`` of ``judged``."""
    return JudgeQuality("unfavourable", share, judged, 0.95, 0.9, 0.95, 0.0)


NO_RATE_TESTS = pl.DataFrame(schema={"model_name": pl.Utf8, "label": pl.Utf8,
                                     "p_value": pl.Float64})


def test_a_one_label_judge_is_warned_of_from_twenty_answers_and_above_ninety_percent():
    """Bugs caught: the warning needing more than 20 judged answers, or firing at a share of
    exactly 90%."""
    assert any("gave 'unfavourable' to 95% of the 20 answers" in warning
               for warning in quality_warnings(_judge(0.95, 20), "j", NO_RATE_TESTS, []))
    assert quality_warnings(_judge(0.95, 19), "j", NO_RATE_TESTS, []) == []
    assert quality_warnings(_judge(0.9, 40), "j", NO_RATE_TESTS, []) == []


def test_unequal_abstention_is_warned_of_for_both_abstentions_below_five_percent():
    """Bugs caught: needs_more_information left out of the abstention-rate warning, p = 0.05
    counted as a difference, and a label whose test had no p-value raising a TypeError."""
    tests = pl.DataFrame({"model_name": ["m", "m", "m", "m"],
                          "label": ["needs_more_information", "refusal", "refusal", "favourable"],
                          "p_value": [0.01, 0.05, None, 0.001]})
    found = quality_warnings(_judge(0.5, 40), "j", tests, [])
    assert found == ["m: the needs_more_information rate differs between personas (p = 0.01, see "
                     "label_rate_tests.csv): unequal abstention is itself a finding"]


def test_a_rope_with_a_missing_bound_has_no_words():
    """Bug caught: a ROPE with one bound missing (an empty cell) raised a TypeError instead of
    leaving the ROPE unsaid."""
    assert rope_words({"rope_low": -0.1, "rope_high": None}) is None
    assert rope_words({"rope_low": None, "rope_high": 0.1}) is None
    assert rope_words({"rope_low": -0.18, "rope_high": 0.18}) == "ROPE ±0.18"


def test_the_contrast_count_is_said_only_of_a_family_wise_interval():
    """Bug caught: a decision on a normal interval without family-wise control was said to be
    taken "over the run's 7 contrasts", which only a family-wise interval is."""
    row = {**FAMILYWISE, "familywise_alpha": None, "decision_prob": 0.94,
           "decision_interval_kind": "normal"}
    assert "the 94% normal interval (-4.92 to +0.46) reaches into" in contrast_sentence(row, 0.94)


def test_an_hdi_reaching_into_the_rope_from_above_is_not_said_to_lie_clear_of_it():
    """Bug caught: the "HDI alone lies clear of the ROPE" clause compared the HDI's lower end
    with the ROPE's lower bound, so an HDI from +0.05 to +0.90 (inside a ROPE of ±0.18 at its
    lower end) was said to lie clear of it."""
    row = {**FAMILYWISE, "mean": 0.5, "hdi_low": 0.05, "hdi_high": 0.90}
    assert "alone lies clear" not in contrast_sentence(row, 0.94)
    assert "alone lies clear" in contrast_sentence({**row, "hdi_low": 0.20}, 0.94)


def test_a_contrast_sentence_gives_its_probability_of_direction():
    """Bug caught: the probability of direction left out of the sentence."""
    assert ", probability of direction 1.00." in contrast_sentence(CONTRASTS.row(0, named=True),
                                                                   0.94)
    assert "probability of direction 0.62." in contrast_sentence(CONTRASTS.row(1, named=True),
                                                                 0.94)
    assert "probability of direction" not in contrast_sentence(
        {**CONTRASTS.row(1, named=True), "p_direction": None}, 0.94)


def test_a_noise_floor_with_one_bound_of_its_interval_is_read_without_the_interval():
    """Bug caught: a floor whose interval had its lower bound only (an empty cell) raised a
    TypeError formatting the missing upper bound."""
    row = {**CONTRASTS.row(0, named=True), "noise_floor": 0.45, "noise_floor_low": 0.21,
           "noise_floor_high": None}
    assert "Noise floor 0.45 (the typical gap two groups" in contrast_sentence(row, 0.94)


def test_one_null_persona_is_no_noise_floor():
    """Bug caught: a single null persona gave a "range" from its mean to its mean."""
    assert noise_floor(THETAS.filter(pl.col("respondent_id") != "m/null_y")) is None


def test_the_reading_says_which_models_noise_floor_is_mostly_its_prior():
    """Bug caught: plain_language_reading passed the models whose floor is its prior the wrong
    way round, so the measured floor was called the prior's and the prior's a measurement."""
    floored = CONTRASTS.head(1).with_columns(noise_floor=pl.lit(0.94))
    prior = plain_language_reading(floored, THETAS, 0.94, floor_from_prior=frozenset({"m"}))
    assert "mostly from its prior" in prior[0]
    measured = plain_language_reading(floored, THETAS, 0.94, floor_from_prior=frozenset({"n"}))
    assert "mostly from its prior" not in measured[0]


def test_a_noise_floor_column_of_nulls_is_no_floor_to_point_to():
    """Bug caught: a contrasts table whose noise_floor column is all null (fewer than two null
    personas per model) was read as having a floor "above"."""
    nulls = CONTRASTS.with_columns(noise_floor=pl.lit(None, pl.Float64))
    null_sentence = next(sentence for sentence in plain_language_reading(nulls, THETAS, 0.94)
                         if sentence.startswith("Null personas"))
    assert "the range understates" in null_sentence
    assert "the noise floor above" not in null_sentence


def test_only_intervals_wholly_outside_the_null_range_are_named():
    """Bugs caught: a persona named "above" when its interval's lower end cleared the lowest
    null mean rather than the highest, or "below" when its upper end fell under the highest
    null mean rather than the lowest; and name personas left out of the comparison."""
    thetas = pl.concat([THETAS, pl.DataFrame({
        "respondent_id": ["m/inside", "m/named_low"], "persona_kind": ["explicit", "name"],
        "mean": [0.0, -1.0], "hdi_low": [-0.1, -1.5], "hdi_high": [0.1, -0.5]})])
    reading = plain_language_reading(None, thetas, 0.94)
    assert "Whole interval above every null persona: m/a." in reading
    assert "Whole interval below every null persona: m/named_low." in reading
    assert not any("m/inside" in sentence for sentence in reading)


def test_answers_no_one_labelled_do_not_decide_who_the_labeller_was():
    """Bugs caught: an answer without a label (label_source "none") counted as a labeller, so
    the model's own option preferences beside it were sent to audit.judge_eval; and labels with
    no labeller at all (no label_source column) got no word about the unmeasured judge."""
    from audit.methods.rasch.report.reading import unmeasured_judge_note

    prompts, labels = _labels({"m/a": ["favourable", "unparseable"]})
    scored = labels.with_columns(label_source=pl.Series(["logprob", "none"]))
    assert unmeasured_judge_note(scored, "logprob") is None
    note = unmeasured_judge_note(labels.drop("label_source"), "qwen_coder_1_5b")
    assert note is not None and "audit.judge_eval judge=qwen_coder_1_5b`" in note


def test_a_fifth_of_answers_or_gold_answers_unlabelled_is_no_caveat_yet():
    """Bugs caught: the unparseable caveats firing at exactly 20% of the answers, or of the gold
    answers, where the threshold is "above 20%"."""
    prompts, labels = _labels({"m/a": ["favourable"] * 2 + ["unfavourable"] * 2 + ["unparseable"]})
    judge = JudgeQuality("favourable", 0.5, 4, 0.76, 0.6, 0.95, 0.2)
    found = caveats(labels, prompts, judge, True, 0, "j")
    assert not any("unparseable" in caveat for caveat in found)
    more = JudgeQuality("favourable", 0.5, 4, 0.76, 0.6, 0.95, 0.25)
    assert any(caveat.startswith("The judge left 25% of the gold answers unlabelled (unparseable), "
                                 "and 20% of this audit's") for caveat in caveats(
        labels, prompts, more, True, 0, "j"))


def test_ten_decided_answers_a_respondent_are_enough_for_a_ranking():
    """Bug caught: the few-answers caveat fired at exactly MIN_ANSWERS_PER_RESPONDENT (10)
    decided answers a respondent, where it means fewer than that."""
    judge = JudgeQuality("favourable", 0.5, 20, 0.95, 0.9, 0.95, 0.0)
    prompts, labels = _labels({"m/a": ["favourable"] * 10,
                               "m/b": ["unfavourable"] * 10 + ["unparseable"]})
    assert not any("decided answers" in caveat
                   for caveat in caveats(labels, prompts, judge, True, 0, "j"))
    prompts, labels = _labels({"m/a": ["favourable"] * 10, "m/b": ["unfavourable"] * 9})
    assert any("only 9 decided answers" in caveat
               for caveat in caveats(labels, prompts, judge, True, 0, "j"))


def test_only_a_probability_fit_gets_the_probability_caveat():
    """Bug caught: the caveat on what a fit of P(favourable) measures given to decision fits
    and withheld from probability fits."""
    assert response_caveat("decision") == []
    (caveat,) = response_caveat("probability")
    assert caveat.startswith("The fit read each answer's P(favourable) (fit.response=probability)")


def test_caveats_of_an_empty_labels_table_do_not_divide_by_zero():
    """Bug caught: the unparseable share divided by the number of labels, a ZeroDivisionError on
    a run with no labelled answer."""
    prompts, labels = _labels({"m/a": ["favourable"]})
    found = caveats(labels.clear(), prompts, JudgeQuality("", math.nan, 0, None, None, None, None),
                    True, 0, "j")
    assert any("only 0 decided answers" in caveat for caveat in found)


def test_diagnostic_checks_pass_at_their_limits_and_fail_just_past_them():
    """Catches a strict comparison at a limit, or the tail ESS checked with the bulk ESS."""
    from audit.methods.rasch.report.html import diagnostic_checks

    at_limits = diagnostic_checks(Diagnostics(1.01, 400.0, 400.0, 0, 1.01, 400.0))
    assert [check["ok"] for check in at_limits] == [True] * 4
    assert [check["limit"] for check in at_limits] == ["<= 1.01", ">= 400", ">= 400", "0"]
    past = diagnostic_checks(Diagnostics(1.011, 900.0, 399.0, 1, 1.01, 400.0))
    assert [check["ok"] for check in past] == [False, True, False, False]


def test_the_page_context_counts_answers_and_reads_nan_as_n_a(tmp_path):
    """Catches a NaN statistic printed as "nan", answers from the store miscounted, or the
    judge's failed requests dropped from the label counts when there are some."""
    from audit.methods.rasch.report.html import diagnostic_checks

    inputs = dataclasses.replace(
        _inputs(tmp_path, CONVERGED, None),
        responses=pl.DataFrame({"prompt_id": ["p1", "p2"], "status": ["ok", "error"],
                                "from_cache": [True, True]}),
        labels=pl.DataFrame({"prompt_id": ["p1", "p2"], "label": ["favourable", "judge_failed"],
                             "label_source": ["rule", "judge"]}))
    context = build_context(inputs, None)
    assert context["counts"] == {"prompts": 2, "ok": 1, "failed": 1, "from_store": 2,
                                 "labelled": 2}
    assert dict(context["label_counts"])["judge_failed"] == 1
    plain = build_context(_inputs(tmp_path, CONVERGED, None), None)["label_counts"]
    assert plain == [("favourable", 1), ("unfavourable", 0), ("needs_more_information", 0),
                     ("refusal", 1), ("unparseable", 0)]
    nan_rhat = diagnostic_checks(Diagnostics(math.nan, 900.0, 800.0, 0, 1.01, 400.0))
    assert nan_rhat[0]["value"] == "n/a"


def test_the_page_context_takes_the_fleiss_kappa_the_identity_and_the_gold_figures(tmp_path):
    """Catches the panel's kappa read from alpha, the backend taken from the config over the
    identity the run recorded, and the labelled-only gold accuracy dropped."""
    gold = {"gold/n": 50.0, "gold/accuracy": 0.8, "gold/accuracy_low": 0.7,
            "gold/accuracy_high": 0.9, "gold/labelled_accuracy": 0.85,
            "gold/cohen_kappa": 0.6, "gold/rules_coverage": 0.5, "gold/rules_accuracy": 1.0,
            "gold/judge_coverage": 0.5, "gold/judge_accuracy": 0.6}
    inputs = dataclasses.replace(
        _inputs(tmp_path, CONVERGED, CONTRASTS.head(0)), gold_metrics=gold,
        gold_confusion=pl.DataFrame({"truth": []}, schema={"truth": pl.Utf8}),
        panel_metrics={"judge/n_judges": 2.0, "judge/krippendorff_alpha": 0.1,
                       "judge/fleiss_kappa": 0.2},
        model_identities={"m": {"backend": "recorded", "model": "fake-m"}})
    context = build_context(inputs, None)
    assert context["panel"] == {"alpha": 0.1, "kappa": 0.2, "n_judges": 2.0}
    assert context["models"][0]["backend"] == "recorded"
    assert context["gold"]["labelled_accuracy"] == 0.85
    assert context["contrasts"] is None and context["confusion"] is None


def test_the_page_context_titles_the_method_and_sorts_domains(tmp_path):
    """Catches the method left out of the title, an unknown version shown blank, and the
    domains listed in hash order."""
    domains = ["lending", "hiring", "housing", "health", "education", "credit"]
    prompts = pl.DataFrame({"prompt_id": [f"p{index}" for index in range(6)],
                            "respondent_id": ["m/a"] * 6, "persona_id": ["a"] * 6,
                            "persona_kind": ["explicit"] * 6,
                            "item_id": [f"i{index}" for index in range(6)], "domain": domains})
    inputs = dataclasses.replace(_inputs(tmp_path, CONVERGED, None), prompts=prompts)
    context = build_context(inputs, None)
    assert context["title"] == "Audit report: m (rasch)"
    assert context["version"] == "unknown"
    assert context["items"]["domains"] == sorted(domains)


def test_the_page_shows_forty_theta_rows(tmp_path):
    """Catches a smaller cap on the ranking's rows shown in the page."""
    thetas = pl.DataFrame({"respondent_id": [f"m/p{index:02d}" for index in range(41)],
                           "persona_kind": ["explicit"] * 41, "mean": [0.0] * 41,
                           "hdi_low": [-1.0] * 41, "hdi_high": [1.0] * 41})
    inputs = dataclasses.replace(_inputs(tmp_path, CONVERGED, None), thetas=thetas)
    assert len(build_context(inputs, None)["thetas"]) == 40


def test_the_page_filters_print_two_decimals_and_three_figure_percentiles():
    """Catches the num filter's default digits or the percentile filter's format changed."""
    from audit.methods.rasch.report.html import template_environment

    filters = template_environment().filters
    assert filters["num"](1.23456) == "1.23" and filters["num"](math.nan) == "n/a"
    assert filters["percentile"](12.345) == "12.3%" and filters["percentile"](None) == "n/a"


def test_the_page_lists_the_personas_and_embeds_figures_as_png_data(tmp_path):
    """Catches the persona list left empty or a figure embedded under the wrong media type."""
    import base64

    page = render_report(build_context(_inputs(tmp_path, CONVERGED, None), None))
    assert "<p>Personas: a, b</p>" in page
    png = base64.b64encode((tmp_path / "forest_theta.png").read_bytes()).decode("ascii")
    assert f'src="data:image/png;base64,{png}"' in page
