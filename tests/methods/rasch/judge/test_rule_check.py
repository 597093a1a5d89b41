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
