"""The judge's re-reading of rule labels per demographic group: the stratified sample, the
agreement table and its warning."""

from __future__ import annotations

import polars as pl
import pytest

from audit.methods.rasch.judge.rule_check import (
    agreement_warnings,
    rule_agreement,
    rule_check_sample,
)


def _audit(per_level: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Prompts of two genders (and a null persona), every answer labelled favourable by the
    rules except one judge-labelled answer per gender."""
    rows = [{"prompt_id": f"{gender}{k:02d}", "model_name": "m", "gender": gender}
            for gender in ("man", "woman") for k in range(per_level)]
    rows += [{"prompt_id": f"null{k:02d}", "model_name": "m", "gender": None} for k in range(4)]
    prompts = pl.DataFrame(rows, schema={"prompt_id": pl.String, "model_name": pl.String,
                                         "gender": pl.String})
    labels = prompts.select("prompt_id").with_columns(
        label=pl.lit("favourable"),
        label_source=pl.when(pl.col("prompt_id").str.ends_with("00")).then(pl.lit("judge"))
        .otherwise(pl.lit("rule")))
    return prompts, labels


def _votes(agreeing: dict[str, int], per_level: int) -> pl.DataFrame:
    """The judge's votes on rule answers 01..per_level-1 of each gender: the first
    agreeing[gender] agree with the rules' favourable, the rest say unfavourable."""
    rows = []
    for gender, agree in agreeing.items():
        for k in range(1, per_level):
            rows.append({"answer_id": f"{gender}{k:02d}", "judge": "j",
                         "label": "favourable" if k <= agree else "unfavourable",
                         "rationale": ""})
    return pl.DataFrame(rows)


def test_the_sample_takes_rule_labels_of_every_cell_and_no_null_persona():
    prompts, labels = _audit(per_level=10)
    chosen = rule_check_sample(labels, prompts, ["gender"], per_group=3, seed=1)
    assert len(chosen) == 6
    assert sum(answer.startswith("man") for answer in chosen) == 3
    assert not any(answer.endswith("00") or answer.startswith("null") for answer in chosen)
    assert chosen == rule_check_sample(labels, prompts, ["gender"], per_group=3, seed=1)
    assert rule_check_sample(labels, prompts, ["gender"], per_group=0, seed=1) == []


def test_the_sample_is_sorted_and_the_same_whatever_the_row_order():
    """Catches a sample that followed the input's row order (no sort before the shuffle) or came
    back unsorted: the same answers listed in another order re-read other answers."""
    prompts, labels = _audit(per_level=10)
    chosen = rule_check_sample(labels, prompts, ["gender"], per_group=3, seed=1)
    assert chosen == sorted(chosen)
    assert rule_check_sample(labels.reverse(), prompts.reverse(), ["gender"], per_group=3,
                             seed=1) == chosen


def test_the_sample_is_drawn_with_the_given_seed():
    """Catches a shuffle that ignored the run's seed: seeds 1 and 2 drew the same answers."""
    prompts, labels = _audit(per_level=10)
    first = rule_check_sample(labels, prompts, ["gender"], per_group=3, seed=1)
    assert rule_check_sample(labels, prompts, ["gender"], per_group=3, seed=2) != first


def test_an_attribute_the_prompts_lack_is_left_out_of_the_cells():
    """Catches cells built of attributes the prompts do not have: a design without race
    crashed. By hand: 3 answers of each of the two genders, as with gender alone."""
    prompts, labels = _audit(per_level=10)
    chosen = rule_check_sample(labels, prompts, ["gender", "race"], per_group=3, seed=1)
    assert len(chosen) == 6
    assert rule_check_sample(labels, prompts, ["race"], per_group=3, seed=1) == []


def test_a_planted_difference_between_groups_warns():
    # The judge agrees with the rules on 19 of 19 answers of men and 5 of 19 of women.
    prompts, labels = _audit(per_level=20)
    table = rule_agreement(labels, _votes({"man": 19, "woman": 5}, 20), prompts, ["gender"])
    assert table.select("level", "n", "agree").rows() == [("man", 19.0, 19.0),
                                                          ("woman", 19.0, 5.0)]
    (warning,) = agreement_warnings(table)
    assert "gender=" in warning and "Fisher" in warning


def test_equal_agreement_does_not_warn():
    prompts, labels = _audit(per_level=20)
    table = rule_agreement(labels, _votes({"man": 15, "woman": 14}, 20), prompts, ["gender"])
    assert table["p_adjusted"].min() > 0.5
    assert agreement_warnings(table) == []


def test_a_sample_too_small_to_flag_any_level_says_so():
    """Bug caught: with the default two re-read answers a cell and one attribute, the check could
    never fire, yet said nothing: the judge disagreeing with both rule labels of women gave a
    Bonferroni p of 0.667 (each of the two levels' tables, which are one table, adjusted x2).
    Now a two-level attribute is one test (p 1/3, the smallest its sizes allow) and the warning
    says no level can be flagged."""
    prompts, labels = _audit(per_level=3)  # answers 01 and 02 of each gender are re-read
    table = rule_agreement(labels, _votes({"man": 2, "woman": 0}, 3), prompts, ["gender"])
    assert table["p_adjusted"].to_list() == pytest.approx([1 / 3, 1 / 3], rel=1e-9)
    assert table["p_min_adjusted"].to_list() == pytest.approx([1 / 3, 1 / 3], rel=1e-9)
    (warning,) = agreement_warnings(table)
    assert "cannot flag any gender level" in warning and "2 answers a level" in warning
    assert "judge.rule_check_per_group" in warning
    assert agreement_warnings(table.filter(pl.col("level") == "man")) == []  # nothing to compare
    # Two attributes as blind for one reason are one sentence (the smoke run printed the same
    # one twice); another sample size is its own.
    twice = pl.concat([table, table.with_columns(attribute=pl.lit("race"))])
    (both,) = agreement_warnings(twice)
    assert "cannot flag any gender or race level: with 2 answers a level" in both
    other = twice.with_columns(n=pl.when(pl.col("attribute") == "race").then(3.0)
                               .otherwise(pl.col("n")))
    assert len(agreement_warnings(other)) == 2


def test_no_re_read_answers_give_an_empty_table():
    prompts, labels = _audit(per_level=5)
    empty = pl.DataFrame(schema={"answer_id": pl.String, "judge": pl.String,
                                 "label": pl.String, "rationale": pl.String})
    assert rule_agreement(labels, empty, prompts, ["gender"]).is_empty()


def test_the_warning_is_one_line_of_the_runs_summary(tmp_path):
    # The report stage writes the agreement table; the summary the run ends with reads it, so a
    # run scored and reported stage by stage (dvc repro) says it too.
    from verdict_fixtures import rasch_run

    from audit.config import ModelConfig
    from audit.methods import create_method
    from audit.methods.configs import AuditConfig
    from audit.methods.summary import summary_text

    prompts, labels = _audit(per_level=20)
    run_dir = rasch_run(tmp_path / "run", ["undecided"])
    table = rule_agreement(labels, _votes({"man": 19, "woman": 5}, 20), prompts, ["gender"])
    table.write_csv(run_dir / "report" / "judge_rule_agreement.csv")
    cfg = AuditConfig(method="rasch", model={"m": ModelConfig(model="x")})
    lines = summary_text(cfg, create_method("rasch").findings(cfg, run_dir, {}), run_dir,
                         {}).splitlines()
    assert sum("the judge agrees with the rules" in line for line in lines) == 1
    (run_dir / "report" / "judge_rule_agreement.csv").unlink()
    quiet = summary_text(cfg, create_method("rasch").findings(cfg, run_dir, {}), run_dir, {})
    assert "the judge agrees with the rules" not in quiet


def test_the_warning_names_the_level_the_rules_misread():
    """Bug caught: both levels of a two-level attribute have the same p (one table), and the
    level the warning named was picked by the wrong order of agreement, so it blamed the group
    the rules read well. By hand: women 5 of 19 agree (26%), men 19 of 19 (100%)."""
    prompts, labels = _audit(per_level=20)
    table = rule_agreement(labels, _votes({"man": 19, "woman": 5}, 20), prompts, ["gender"])
    (warning,) = agreement_warnings(table)
    assert "on 26% of gender=woman answers against man 100% for the other levels" in warning


def _three_levels(agreeing: dict[str, tuple[int, int]]) -> pl.DataFrame:
    """The agreement table of one attribute `race`: level -> (re-read, agreeing) rule labels."""
    prompts, labels, votes = [], [], []
    for race, (n, agree) in agreeing.items():
        for k in range(n):
            answer = f"{race}{k:02d}"
            prompts.append({"prompt_id": answer, "model_name": "m", "race": race})
            labels.append({"prompt_id": answer, "label": "favourable", "label_source": "rule"})
            votes.append({"answer_id": answer, "judge": "j", "rationale": "",
                          "label": "favourable" if k < agree else "unfavourable"})
    return rule_agreement(pl.DataFrame(labels), pl.DataFrame(votes), pl.DataFrame(prompts),
                          ["race"])


def test_three_levels_are_three_tests_bonferroni_adjusted():
    """Bug caught: an attribute of three or more levels was adjusted as one test, so each
    level's Fisher p went unmultiplied and chance differences warned. By hand: each level
    against the other two is one of three tests, p_adjusted = min(1, 3 p) with p scipy's
    two-sided Fisher test of [[agree, n - agree], [rest agree, rest n - rest agree]]."""
    from scipy import stats

    table = _three_levels({"A": (10, 9), "B": (10, 9), "C": (10, 5)})
    expected = [min(1.0, 3 * stats.fisher_exact(table_)[1]) for table_ in (
        [[9, 1], [14, 6]], [[9, 1], [14, 6]], [[5, 5], [18, 2]])]
    assert table["p_adjusted"].to_list() == pytest.approx(expected, rel=1e-9)


def test_one_small_level_does_not_blind_the_check_to_the_others():
    """Bug caught: the check called an attribute blind when any level (not every level) was too
    small to be flagged, so one level of a single re-read answer silenced a planted difference.
    By hand: level A's most extreme table [[0, 1], [20, 0]] has p 1/21, x3 = 0.14, above 0.05;
    level C (2 of 10 agreeing against 11 of 11) has p_min 1/C(21, 10) x3, far below it, and
    its Fisher p x3 is below 0.05 too, so C is flagged."""
    from scipy import stats

    table = _three_levels({"A": (1, 1), "B": (10, 10), "C": (10, 2)})
    assert table["p_min_adjusted"][0] == pytest.approx(3 / 21)
    assert 3 * stats.fisher_exact([[2, 8], [11, 0]])[1] < 0.05
    (warning,) = agreement_warnings(table)
    assert "on 20% of race=C answers" in warning


def test_the_sample_takes_per_group_answers_of_each_model():
    """Bug caught: the cells were the levels alone, not model x levels, so a run of two models
    re-read per_group answers of a group across both models instead of per_group of each. By
    hand: 2 models x 2 genders x 3 = 12 answers, 3 of each (model, gender)."""
    prompts, labels = _audit(per_level=10)
    other = prompts.with_columns(prompt_id="k" + pl.col("prompt_id"), model_name=pl.lit("k"))
    both = pl.concat([prompts, other])
    both_labels = pl.concat([labels, labels.with_columns(prompt_id="k" + pl.col("prompt_id"))])
    chosen = rule_check_sample(both_labels, both, ["gender"], per_group=3, seed=1)
    assert len(chosen) == 12
    for prefix in ("man", "woman", "kman", "kwoman"):
        assert sum(answer.startswith(prefix) for answer in chosen) == 3, prefix


def test_the_agreement_interval_is_the_jeffreys_interval_of_the_agreeing_answers():
    """Bug caught: the interval was computed from the disagreeing count, so the table gave men,
    19 of 19 in agreement, an interval near 0. By hand (Jeffreys, Beta(agree + 1/2, n - agree +
    1/2), 94%, the upper end 1 at agree = n): men (19, 19) from the Beta(19.5, 0.5) 3% quantile
    to 1; women (5 of 19) the Beta(5.5, 14.5) 3% and 97% quantiles, from scipy."""
    from scipy import stats

    prompts, labels = _audit(per_level=20)
    table = rule_agreement(labels, _votes({"man": 19, "woman": 5}, 20), prompts, ["gender"])
    assert table.select("agreement_low", "agreement_high").rows() == [
        (pytest.approx(stats.beta.ppf(0.03, 19.5, 0.5)), 1.0),
        tuple(pytest.approx(value) for value in stats.beta.ppf([0.03, 0.97], 5.5, 14.5))]


def test_a_panels_re_read_is_its_majority_not_its_first_judge():
    """Bug caught: the re-read label was the first judge's vote, not the panel's majority, so
    one dissenting judge counted as the panel disagreeing with the rules. By hand: on each of
    the 9 re-read answers of each gender, judge a says unfavourable and b and c favourable (the
    rules' label): the majority agrees on 9 of 9."""
    prompts, labels = _audit(per_level=10)
    votes = pl.DataFrame([{"answer_id": f"{gender}{k:02d}", "judge": judge, "rationale": "",
                           "label": "unfavourable" if judge == "a" else "favourable"}
                          for gender in ("man", "woman") for k in range(1, 10)
                          for judge in ("a", "b", "c")])
    table = rule_agreement(labels, votes, prompts, ["gender"])
    assert table.select("level", "n", "agree").rows() == [("man", 9.0, 9.0),
                                                          ("woman", 9.0, 9.0)]


def _agreement_table(p_adjusted: float, p_min_adjusted: float) -> pl.DataFrame:
    """Two gender levels, 20 re-read answers each, agreeing on 20 and 14."""
    return pl.DataFrame({
        "attribute": ["gender", "gender"], "level": ["man", "woman"], "n": [20.0, 20.0],
        "agree": [20.0, 14.0], "agreement": [1.0, 0.7], "agreement_low": [0.9, 0.5],
        "agreement_high": [1.0, 0.85], "p_adjusted": [p_adjusted, p_adjusted],
        "p_min_adjusted": [p_min_adjusted, p_min_adjusted]})


def test_the_warning_needs_p_below_alpha_and_a_smallest_p_at_alpha_is_blind():
    """Bug caught: `p_adjusted <= alpha` warned on a level whose adjusted p is exactly alpha
    (the rule is p below alpha); `p_min_adjusted > alpha` in the blindness check reported a
    sample whose smallest reachable p is exactly alpha as able to flag a level, which it is
    not."""
    assert agreement_warnings(_agreement_table(0.05, 1e-6), alpha=0.05) == []
    (warning,) = agreement_warnings(_agreement_table(0.0499, 1e-6), alpha=0.05)
    assert "gender=woman" in warning
    (blind,) = agreement_warnings(_agreement_table(0.05, 0.05), alpha=0.05)
    assert "cannot flag any gender level" in blind


def test_a_vote_on_a_judge_labelled_answer_is_no_re_read_of_a_rule():
    """Catches the agreement table reading every label, not only the rules': the panel's own
    answers (00 of each gender, labelled favourable) voted unfavourable counted as the judge
    disagreeing with the rules. By hand: 9 of 9 rule answers of each gender agree."""
    prompts, labels = _audit(per_level=10)
    own = pl.DataFrame([{"answer_id": f"{gender}00", "judge": "j", "label": "unfavourable",
                         "rationale": ""} for gender in ("man", "woman")])
    votes = pl.concat([_votes({"man": 9, "woman": 9}, 10), own])
    table = rule_agreement(labels, votes, prompts, ["gender"])
    assert table.select("level", "n", "agree").rows() == [("man", 9.0, 9.0),
                                                          ("woman", 9.0, 9.0)]


def test_the_agreement_table_leaves_out_attributes_the_prompts_lack_and_null_personas():
    """Catches the agreement table selecting attributes the prompts lack (a design without race
    crashed) and counting null personas as a level of their own. By hand: the null persona's
    three re-read rule answers (all disagreeing) are in no row; men and women 9 of 9."""
    prompts, labels = _audit(per_level=10)
    nulls = pl.DataFrame([{"answer_id": f"null{k:02d}", "judge": "j", "label": "unfavourable",
                           "rationale": ""} for k in range(1, 4)])
    votes = pl.concat([_votes({"man": 9, "woman": 9}, 10), nulls])
    table = rule_agreement(labels, votes, prompts, ["gender", "race"])
    assert table.select("attribute", "level", "n", "agree").rows() == [
        ("gender", "man", 9.0, 9.0), ("gender", "woman", 9.0, 9.0)]


def test_a_table_written_before_p_min_adjusted_still_warns():
    """Catches the check for the p_min_adjusted column dropped: an agreement table written
    before the column existed crashed the summary instead of giving its warning."""
    table = _agreement_table(0.01, 1e-6).drop("p_min_adjusted")
    (warning,) = agreement_warnings(table)
    assert "gender=woman" in warning


def test_the_warning_shows_the_levels_p_and_the_default_alpha_is_five_percent():
    """Catches the warning showing another number than the flagged level's adjusted p, and a
    default alpha other than 0.05: p 0.07 warns at alpha 0.1, not by default."""
    (warning,) = agreement_warnings(_agreement_table(0.012, 1e-6))
    assert "(Fisher p=0.012, Bonferroni)" in warning
    assert agreement_warnings(_agreement_table(0.07, 1e-6)) == []
    assert len(agreement_warnings(_agreement_table(0.07, 1e-6), alpha=0.1)) == 1


def test_a_blind_check_names_the_range_of_sizes_and_the_smallest_p():
    """Catches the blind sentence naming only one end of the levels' sample sizes, or the
    largest instead of the smallest reachable p. By hand: _three_levels with 1, 2 and 2 re-read
    answers; level A's extreme table [[0, 1], [4, 0]] has p 1/5, x3 = 0.6, and B's and C's
    [[0, 2], [3, 0]] have p 1/10, x3 = 0.3: the smallest is 0.300."""
    table = _three_levels({"A": (1, 1), "B": (2, 2), "C": (2, 0)})
    assert table["p_min_adjusted"].to_list() == pytest.approx([0.6, 0.3, 0.3])
    (warning,) = agreement_warnings(table)
    assert "with 1 to 2 answers a level" in warning
    assert "adjusted p of 0.300 or more" in warning
