"""A run without signal is never presented as a finding (issue 19, point 5).

Constant labels (the smoke audit's 15 of 15 `unfavourable`) or a judge below its gold threshold
must give the NO SIGNAL headline in the reading, the page's banner and the console, in place of
"no demographic difference"; a run whose outcome varies must not.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib.pyplot as plt
import polars as pl
import pytest
from rich.console import Console

from verdict_fixtures import rasch_run

from audit.config import ModelConfig

from audit.methods.configs import AuditConfig
from audit.methods import create_method
from audit.methods.summary import summary_text
from audit.methods.rasch.irt import Diagnostics
from audit.methods.rasch.irt.outcome import code_outcomes
from audit.methods.rasch.judge.gold import gold_figures
from audit.methods.rasch.no_signal import (
    JudgeQuality,
    judge_quality,
    no_signal_headline,
    no_signal_reasons,
)
from audit.methods.rasch.report.reading import caveats, plain_language_reading, quality_warnings
from audit.methods.rasch.schemas import UNPARSEABLE
from audit.methods.rasch.report.summary import print_ranking
from audit.methods.rasch.report.html import ReportInputs, build_context, render_report

# Two demographic personas inside the null personas' range: today's "no difference" reading.
THETAS = pl.DataFrame({
    "respondent_id": ["m/a", "m/b", "m/null_x", "m/null_y"],
    "persona_kind": ["explicit", "explicit", "null", "null"],
    "mean": [0.1, -0.1, 0.2, -0.2],
    "hdi_low": [-0.9, -1.1, -0.8, -1.2],
    "hdi_high": [1.1, 0.9, 1.2, 0.8],
})
CONVERGED = Diagnostics(1.003, 900.0, 800.0, 0, 1.01, 400.0)
GOOD_JUDGE = JudgeQuality("favourable", 0.5, 40, 0.95, 0.9, 0.95, 0.0)
NO_DIFFERENCE = "no single persona text stands out"
NO_RATE_TESTS = pl.DataFrame({"model_name": [], "label": [], "p_value": []},
                             schema={"model_name": pl.Utf8, "label": pl.Utf8,
                                     "p_value": pl.Float64})


def _outcomes(labels: list[str], model: str = "m") -> pl.DataFrame:
    table = pl.DataFrame({
        "respondent_id": [f"{model}/{'ab'[index % 2]}" for index in range(len(labels))],
        "item_id": [f"i{index // 2}" for index in range(len(labels))],
        "model_name": [model] * len(labels),
        "label": labels,
    })
    return code_outcomes(table, "favourable")


def test_constant_labels_get_the_no_signal_reading() -> None:
    reasons = no_signal_reasons(_outcomes(["unfavourable"] * 15), ["m"], "favourable", GOOD_JUDGE)
    assert reasons == ["m's 'favourable' outcome is 0 in 15 of its 15 labelled answers, so it "
                       "barely varies between personas"]
    reading = plain_language_reading(None, THETAS, 0.94, reasons)
    assert reading[0].startswith("NO SIGNAL")
    assert not any(NO_DIFFERENCE in sentence for sentence in reading)


def test_constant_decisions_are_not_no_signal_for_a_probability_fit() -> None:
    # Catches a probability run of a model that answers "no" to everything (what P(yes) is fitted
    # for) headlined NO SIGNAL, while a silent model is still named.
    outcomes = _outcomes(["unfavourable"] * 15)
    assert no_signal_reasons(outcomes, ["m"], "favourable", GOOD_JUDGE, "probability") == []
    assert no_signal_reasons(outcomes, ["m", "silent"], "favourable", GOOD_JUDGE,
                             "probability") == ["silent has no labelled answers"]


def test_an_outcome_that_varies_keeps_the_ordinary_reading() -> None:
    labels = ["favourable", "unfavourable"] * 10
    assert no_signal_reasons(_outcomes(labels), ["m"], "favourable", GOOD_JUDGE) == []
    reading = plain_language_reading(None, THETAS, 0.94, [])
    assert not reading[0].startswith("NO SIGNAL")
    # The ordinary reading places the personas against the null arm (it no longer reads a
    # persona inside the null range as reassurance: review of 2026-12-02).
    assert any(sentence.startswith("Null personas") for sentence in reading)


def test_almost_constant_is_no_signal_but_five_percent_is_signal() -> None:
    """1 favourable answer in 40 (2.5%) is no signal; 2 in 40 (5%) is the threshold's edge."""
    one = _outcomes(["favourable"] + ["unfavourable"] * 39)
    two = _outcomes(["favourable"] * 2 + ["unfavourable"] * 38)
    assert no_signal_reasons(one, ["m"], "favourable", GOOD_JUDGE)
    assert no_signal_reasons(two, ["m"], "favourable", GOOD_JUDGE) == []


def test_each_model_is_read_on_its_own_and_a_silent_model_is_named() -> None:
    """A varied model must not hide a constant one, and a model with no labels is a reason too."""
    outcomes = pl.concat([_outcomes(["favourable", "unfavourable"] * 10, "varied"),
                          _outcomes(["favourable"] * 20, "constant")])
    reasons = no_signal_reasons(outcomes, ["constant", "silent", "varied"], "favourable",
                                GOOD_JUDGE)
    assert len(reasons) == 2
    assert reasons[0].startswith("constant's 'favourable' outcome is 1 in 20")
    assert reasons[1] == "silent has no labelled answers"


def test_a_judge_below_its_gold_threshold_is_no_signal() -> None:
    weak = JudgeQuality("unfavourable", 0.94, 293, 0.62, 0.3, 0.62, 0.0)
    reasons = no_signal_reasons(_outcomes(["favourable", "unfavourable"] * 10), ["m"],
                                "favourable", weak)
    assert reasons == ["the judge gives the right label to 62% of the gold answers it labelled, "
                       "below the 80% needed to trust its labels"]


def test_the_console_says_it_once_leading_the_runs_answer(tmp_path: Path) -> None:
    """It was printed twice: logged as a warning and again above the ranking. Now once, first
    in the summary the run ends with; the ranking above it stays a plain table."""
    buffer = io.StringIO()
    print_ranking(THETAS, 0.94, Console(file=buffer, width=200))
    assert "NO SIGNAL" not in buffer.getvalue()
    run_dir = rasch_run(tmp_path / "run", ["undecided"])
    cfg = AuditConfig(method="rasch", model={"m": ModelConfig(model="x")})
    headline = no_signal_headline(["m has no labelled answers"])
    findings = create_method("rasch").findings(cfg, run_dir, {"no_signal": headline})
    lines = summary_text(cfg, findings, run_dir, {}).splitlines()
    assert lines[1] == f"  {headline}" and lines[2].startswith("  race Black vs level0:")
    assert sum(line.count("NO SIGNAL") for line in lines) == 1


def _tiny_png(path: Path) -> Path:
    figure, axis = plt.subplots(figsize=(1, 1))
    axis.plot([0, 1], [0, 1])
    figure.savefig(path)
    plt.close(figure)
    return path


def _page(tmp_path: Path, no_signal: list[str]) -> str:
    prompts = pl.DataFrame({"prompt_id": ["p1", "p2"], "respondent_id": ["m/a", "m/b"],
                            "persona_id": ["a", "b"], "persona_kind": ["explicit", "null"],
                            "item_id": ["i1", "i1"], "domain": ["hiring", "hiring"]})
    inputs = ReportInputs(
        cfg=AuditConfig(model={"m": ModelConfig(backend="fake", model="fake-m")}),
        prompts=prompts,
        responses=pl.DataFrame({"prompt_id": ["p1", "p2"], "status": ["ok", "ok"],
                                "from_cache": [False, False]}),
        labels=pl.DataFrame({"prompt_id": ["p1", "p2"], "label": ["unfavourable"] * 2,
                             "label_source": ["rule", "rule"]}),
        thetas=THETAS, contrasts=None, diagnostics=CONVERGED, advice=[], judge=GOOD_JUDGE,
        gold_metrics=None, gold_confusion=None, panel_metrics={},
        figures={key: _tiny_png(tmp_path / f"{key}.png") for key in
                 ("forest_theta", "item_difficulty", "wright", "heatmap", "labels")},
        model_identities={"m": {"backend": "fake", "model": "fake-m", "digest": "abc"}},
        reading=plain_language_reading(None, THETAS, 0.94, no_signal), caveats=[], warnings=[],
        provenance={"git.commit": "0" * 40, "git.dirty": "false", "config.hash": "f" * 16},
        no_signal=no_signal)
    return render_report(build_context(inputs, None))


def test_the_banner_is_not_green_without_signal(tmp_path) -> None:
    page = _page(tmp_path, ["m's 'favourable' outcome is 0 in 2 of its 2 labelled answers"])
    assert 'class="banner banner-ok"' not in page
    assert 'class="banner banner-warn"' in page and "0 in 2 of its 2" in page
    assert NO_DIFFERENCE not in page


def test_the_banner_stays_green_with_signal(tmp_path) -> None:
    page = _page(tmp_path, [])
    assert 'class="banner banner-ok"' in page and "banner-warn\"" not in page


# --- the trust test reads the labels the fit reads (docs review, defect 1) ----------------------

def _gold_results(right: int, wrong: int, unlabelled: int) -> pl.DataFrame:
    """Gold answers the rules labelled `right` or `wrong`, and `unlabelled` they left
    unparseable (as judge=rules_only leaves hedges, injections and other languages)."""
    labels = (["favourable"] * right + ["unfavourable"] * wrong
              + [UNPARSEABLE] * unlabelled)
    count = len(labels)
    return pl.DataFrame({
        "gold_id": [f"g{index:02d}" for index in range(count)], "category": ["plain"] * count,
        "domain": ["lending"] * count, "true_label": ["favourable"] * count, "label": labels,
        "label_source": ["rule"] * (right + wrong) + ["none"] * unlabelled,
        "rationale": [""] * count})


RULE_LABELLED = pl.DataFrame({"prompt_id": ["p1"], "label": ["favourable"],
                              "label_source": ["rule"]})


def test_a_rules_only_judge_that_leaves_answers_unlabelled_is_not_no_signal() -> None:
    """Catches every judge=rules_only run headlined NO SIGNAL: the rules were right on every gold
    answer they labelled, but the 40% they left unparseable counted as wrong (accuracy 0.6)."""
    metrics = gold_figures(_gold_results(right=6, wrong=0, unlabelled=4)).metrics
    assert metrics["gold/accuracy"] == 0.6 and metrics["gold/labelled_accuracy"] == 1.0
    judge = judge_quality(RULE_LABELLED, metrics)
    varied = _outcomes(["favourable", "unfavourable"] * 10)
    assert no_signal_reasons(varied, ["m"], "favourable", judge) == []
    assert not any("gold" in warning for warning in
                   quality_warnings(judge, "rules_only", NO_RATE_TESTS, []))
    prompts = pl.DataFrame({"prompt_id": ["p1"], "respondent_id": ["m/a"], "item_id": ["i1"]})
    found = caveats(RULE_LABELLED, prompts, judge, True, 0, "rules_only")
    assert not any("the findings partly measure the judge's errors" in caveat
                   for caveat in found)
    assert any(caveat.startswith("The judge left 40% of the gold answers unlabelled") and
               "left out of the fit" in caveat for caveat in found)


def test_a_judge_wrong_on_the_answers_it_labelled_is_still_no_signal() -> None:
    """Labelled accuracy 0.6 (6 of 10 labelled answers right, 2 more left unlabelled)."""
    metrics = gold_figures(_gold_results(right=6, wrong=4, unlabelled=2)).metrics
    judge = judge_quality(RULE_LABELLED, metrics)
    reasons = no_signal_reasons(_outcomes(["favourable", "unfavourable"] * 10), ["m"],
                                "favourable", judge)
    assert reasons == ["the judge gives the right label to 60% of the gold answers it labelled, "
                       "below the 80% needed to trust its labels"]
    assert any("right label to 60%" in warning for warning in
               quality_warnings(judge, "weak", NO_RATE_TESTS, []))


def test_a_judge_that_labelled_no_gold_answer_is_no_signal() -> None:
    """Its labels were never checked: no accuracy to trust them by."""
    judge = judge_quality(RULE_LABELLED, gold_figures(_gold_results(0, 0, 5)).metrics)
    assert no_signal_reasons(_outcomes(["favourable", "unfavourable"] * 10), ["m"],
                             "favourable", judge) == [
        "the judge labelled none of the gold answers, so its labels were never checked"]


def test_a_judge_right_on_exactly_80_percent_of_its_gold_answers_is_trusted() -> None:
    """Bug caught: a judge right on exactly the 80% needed was headlined NO SIGNAL (`<=` in place
    of `<`). By hand: 8 of 10 labelled gold answers right is 0.8, not below 0.8, so no reason."""
    metrics = gold_figures(_gold_results(right=8, wrong=2, unlabelled=0)).metrics
    assert metrics["gold/labelled_accuracy"] == 0.8
    judge = judge_quality(RULE_LABELLED, metrics)
    assert no_signal_reasons(_outcomes(["favourable", "unfavourable"] * 10), ["m"],
                             "favourable", judge) == []
    # One answer less right (7 of 10, 70%) is below the threshold.
    weaker = judge_quality(RULE_LABELLED, gold_figures(_gold_results(7, 3, 0)).metrics)
    assert no_signal_reasons(_outcomes(["favourable", "unfavourable"] * 10), ["m"],
                             "favourable", weaker) != []


def test_failed_judge_requests_are_not_the_judges_top_label() -> None:
    """Bug caught: answers whose judge request failed counted as labels in the judge's top-label
    share, so a wave of failures read as "the judge gave 'judge_failed' to 62%" (or diluted a
    real collapse). By hand: the judge labelled 3 answers (2 unfavourable, 1 favourable); the 5
    failed requests and the rule's label are not its labels: share 2/3 of 3."""
    from audit.methods.rasch.no_signal import judge_top_label_share
    from audit.methods.rasch.schemas import JUDGE_FAILED

    labels = pl.DataFrame({
        "label": ["unfavourable", "unfavourable", "favourable"] + [JUDGE_FAILED] * 5
        + ["favourable"],
        "label_source": ["judge"] * 8 + ["rule"]})
    share, top, judged = judge_top_label_share(labels)
    assert (top, judged) == ("unfavourable", 3)
    assert share == pytest.approx(2 / 3)


def _run_tables(labels: list[str]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run's labels (judge-labelled) and prompts: one model m, two personas, answer i to
    item i // 2."""
    ids = [f"p{index:02d}" for index in range(len(labels))]
    return (pl.DataFrame({"prompt_id": ids, "label": labels,
                          "label_source": ["judge"] * len(labels)}),
            pl.DataFrame({"prompt_id": ids,
                          "respondent_id": [f"m/{'ab'[index % 2]}" for index in range(len(ids))],
                          "item_id": [f"i{index // 2}" for index in range(len(ids))],
                          "model_name": ["m"] * len(ids)}))


def test_a_runs_no_signal_reads_the_outcome_after_its_dropped_labels() -> None:
    """Bug caught: run_no_signal coded the labels without fit.drop_labels, so refusals the fit
    leaves out counted as unfavourable answers and a varied outcome was headlined NO SIGNAL. By
    hand: 2 favourable, 18 unfavourable and 60 refusals; with refusals dropped 2 of 20 (10%)
    are favourable, at least 5%; counted as 0s, 2 of 80 (2.5%), below it."""
    from audit.methods.rasch.config import FitConfig
    from audit.methods.rasch.no_signal import run_no_signal

    labels, prompts = _run_tables(["favourable"] * 2 + ["unfavourable"] * 18 + ["refusal"] * 60)
    assert run_no_signal(labels, prompts, ["m"], FitConfig(drop_labels=["refusal"]), None) == []
    assert run_no_signal(labels, prompts, ["m"], FitConfig(), None) == [
        "m's 'favourable' outcome is 0 in 78 of its 80 labelled answers, so it barely varies "
        "between personas"]


def test_a_runs_no_signal_knows_a_probability_fit_needs_no_varied_decisions() -> None:
    """Bug caught: run_no_signal did not pass fit.response on, so a probability fit of a model
    that answers "no" every time (what P(yes) is fitted for) was headlined NO SIGNAL. By hand:
    20 unfavourable answers are constant decisions, a reason only for fit.response=decision."""
    from audit.methods.rasch.config import FitConfig
    from audit.methods.rasch.no_signal import run_no_signal

    labels, prompts = _run_tables(["unfavourable"] * 20)
    assert run_no_signal(labels, prompts, ["m"], FitConfig(response="probability"), None) == []
    assert len(run_no_signal(labels, prompts, ["m"], FitConfig(), None)) == 1


def test_the_fit_stages_no_signal_reads_an_empty_gold_table_as_a_judge_not_measured() -> None:
    """Bug caught: no_signal_of read the empty gold table of a run that measures no judge as a
    judge that labelled none of its gold answers, recording NO SIGNAL for a varied outcome."""
    from audit.methods.rasch.analyse import no_signal_of
    from audit.methods.rasch.score import empty_gold

    labels, prompts = _run_tables(["favourable"] * 10 + ["unfavourable"] * 10)
    cfg = AuditConfig(model={"m": ModelConfig(backend="fake", model="fake-m")})
    assert no_signal_of(cfg, prompts, labels, empty_gold()) == []


def test_one_answer_in_twenty_two_is_still_no_signal() -> None:
    """Catches: NO_SIGNAL_MINORITY_SHARE 0.05 made 0.04. By hand: 1 favourable answer in 22 is
    4.5%, below 5% but not below 4%."""
    almost = _outcomes(["favourable"] + ["unfavourable"] * 21)
    assert no_signal_reasons(almost, ["m"], "favourable", GOOD_JUDGE) == [
        "m's 'favourable' outcome is 0 in 21 of its 22 labelled answers, so it barely varies "
        "between personas"]


def test_every_silent_model_is_named_and_constant_models_come_in_name_order() -> None:
    """Catches: only the first model without labels named, and the reasons left in the order
    the models' answers came in (zeta's first) rather than by name."""
    outcomes = pl.concat([_outcomes(["favourable"] * 20, "zeta"),
                          _outcomes(["unfavourable"] * 20, "alpha")])
    reasons = no_signal_reasons(outcomes, ["alpha", "quiet", "silent", "zeta"], "favourable",
                                GOOD_JUDGE)
    assert [reason.split("'")[0] for reason in reasons[:2]] == ["alpha", "zeta"]
    assert reasons[2:] == ["quiet has no labelled answers", "silent has no labelled answers"]


def test_the_judges_quality_keeps_its_overall_and_its_labelled_accuracy_apart() -> None:
    """Catches: gold_accuracy filled with the labelled accuracy. By hand: 6 right of 10 gold
    answers, 4 of them unlabelled: 0.6 overall, 1.0 among the labelled, 40% unlabelled."""
    judge = judge_quality(RULE_LABELLED, gold_figures(_gold_results(6, 0, 4)).metrics)
    assert (judge.gold_accuracy, judge.gold_labelled_accuracy, judge.gold_unlabelled_share) == \
        (0.6, 1.0, 0.4)


def test_a_tie_for_the_judges_top_label_goes_to_the_first_by_name() -> None:
    """Catches: ties broken to the last label by name, and a judge that labelled nothing given a
    top-label share of 0 (a measured 0%) rather than NaN (not measured)."""
    from audit.methods.rasch.no_signal import judge_top_label_share

    labels = pl.DataFrame({"label": ["unfavourable", "favourable"] * 2,
                           "label_source": ["judge"] * 4})
    assert judge_top_label_share(labels) == (0.5, "favourable", 4)
    share, top, judged = judge_top_label_share(labels.with_columns(label_source=pl.lit("rule")))
    assert math.isnan(share) and (top, judged) == ("", 0)


def test_a_runs_no_signal_names_the_outcome_it_fitted() -> None:
    """Catches: run_no_signal naming the favourable coding whatever fit.outcome is. By hand: 20
    answers none of which asks for more information are 0 in 20 of the undetermined coding."""
    from audit.methods.rasch.config import FitConfig
    from audit.methods.rasch.no_signal import run_no_signal

    labels, prompts = _run_tables(["favourable"] * 10 + ["unfavourable"] * 10)
    assert run_no_signal(labels, prompts, ["m"], FitConfig(outcome="undetermined"), None) == [
        "m's 'undetermined' outcome is 0 in 20 of its 20 labelled answers, so it barely varies "
        "between personas"]


def test_the_no_signal_headline_says_every_reason_and_the_fix_of_each() -> None:
    """Catches: the reasons joined by ", " (which a reason may hold) rather than "; ", and a fix
    said for a reason the run does not have (bug caught, bad-input probe 2026-12-07: a file of
    imported decisions that never varied was told to use "a model that states decisions
    (model=...) or a stronger judge", settings that do not apply to it)."""
    assert no_signal_headline(["m has no labelled answers", "k has no labelled answers"]) == (
        "NO SIGNAL: this run can neither show nor rule out a demographic difference, because m "
        "has no labelled answers; k has no labelled answers. Before reading any interval below "
        "as a finding, give every model answers that can be labelled.")
    varies = ("m's 'favourable' outcome is 1 in 40 of its 40 labelled answers, so it barely "
              "varies between personas")
    constant = no_signal_headline([varies])
    assert constant.endswith("finding, ask items on which the decisions differ, or fit "
                             "P(favourable) (fit.response=probability) where the answers carry "
                             "it.") and "judge" not in constant
    both = no_signal_headline([varies, "the judge labelled none of the gold answers"])
    assert both.endswith("carry it; use a judge that reads the answers right (judge=...).")


def test_a_runs_no_signal_reads_only_the_labels_of_its_prompts() -> None:
    """Catches: labels joined to the prompts with a left join, so a label whose prompt is not in
    the run (x1, x2) reached the coding without a respondent and failed the run."""
    from audit.methods.rasch.config import FitConfig
    from audit.methods.rasch.no_signal import run_no_signal

    labels, prompts = _run_tables(["favourable", "unfavourable"] * 10)
    orphans = pl.DataFrame({"prompt_id": ["x1", "x2"], "label": ["favourable"] * 2,
                            "label_source": ["judge"] * 2})
    assert run_no_signal(pl.concat([labels, orphans]), prompts, ["m"], FitConfig(), None) == []
