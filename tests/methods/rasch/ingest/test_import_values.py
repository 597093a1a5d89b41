"""Imported values that are well formed but say something other than the user meant (bad-input
probe 2026-12-07): each was accepted without a word and changed the audit's result, or was
refused with a fix that did not apply."""

from __future__ import annotations

import gzip
import json
import logging
from dataclasses import replace
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from audit.errors import AuditError
from audit.methods.configs import AuditConfig
from audit.methods.rasch.ingest.formats import read_answers
from audit.methods.rasch.ingest.stages import design, imported_answers
from audit.methods.rasch.ingest.values import at_least, check_decisions_agree

ROOT = Path(__file__).resolve().parents[4]
CELLS = [(gender, race) for gender in ("woman", "man") for race in ("Black", "White")]


def _rows(items=("hiring_01", "hiring_02", "hiring_03")) -> list[dict]:
    return [{"model": "m", "persona_id": f"{race}_{gender}".lower(), "gender": gender,
             "race": race, "item": item, "decision": "HIRE" if (number + index) % 2 else "REJECT"}
            for number, (gender, race) in enumerate(CELLS) for index, item in enumerate(items)]


def _config(path: Path, **ingest) -> AuditConfig:
    defaults = AuditConfig()
    return replace(defaults, ingest=replace(defaults.ingest, input=str(path), **ingest),
                   items=replace(defaults.items,
                                 bank=str(ROOT / "data" / "items" / "decision_items.csv")))


def _csv(tmp_path: Path, rows: list[dict], name: str = "answers.csv") -> Path:
    path = tmp_path / name
    pl.DataFrame(rows).write_csv(path)
    return path


def test_a_model_column_empty_in_some_rows_is_refused_unless_ingest_model_names_them(tmp_path):
    """Bug caught: the empty cells became a model named "imported", with contrasts of its own,
    and the larger family of comparisons turned the real model's `different` race gap into
    `undecided`."""
    rows = _rows()
    rows[4]["model"] = rows[9]["model"] = ""
    path = _csv(tmp_path, rows)
    with pytest.raises(AuditError, match=r"column 'model' is empty in 2 rows \(first: row 5\) and "
                                         r"names a model in the others: fill it in, or name the "
                                         r"model of the empty rows with ingest.model=NAME"):
        imported_answers(_config(path))
    # Named by the user, the empty rows are that model's (docs/ingest.md).
    assert set(imported_answers(_config(path, model="m"))["model"].to_list()) == {"m"}


def test_a_placeholder_level_is_read_as_no_level_and_said(tmp_path, caplog):
    """Bug caught: race "N/A" was a group of its own ("race Black vs N/A", "N/A vs White")."""
    rows = _rows() + [{"model": "m", "persona_id": "a_woman", "gender": "woman", "race": " N/A ",
                       "item": "hiring_01", "decision": "HIRE"}]
    with caplog.at_level(logging.WARNING):
        answers = imported_answers(_config(_csv(tmp_path, rows)))
    assert sorted(answers["race"].drop_nulls().unique().to_list()) == ["Black", "White"]
    assert answers.filter(pl.col("persona_id") == "a_woman")["race"].to_list() == [None]
    said = [record.getMessage() for record in caplog.records]
    assert any("column 'race' holds 'N/A' in 1 row, read as empty" in line for line in said), said


def _probability_rows(p_of_stated: list[float]) -> list[dict]:
    """One decision a row, with the probability the row's p_favourable gives that decision."""
    rows = []
    for index, p in enumerate(p_of_stated):
        gender, race = CELLS[index % 4]
        favourable = index % 3 != 0
        rows.append({"model": "m", "gender": gender, "race": race,
                     "item": f"hiring_0{index // 4 + 1}", "persona_id": f"{race}_{gender}",
                     "decision": "HIRE" if favourable else "REJECT",
                     "p_favourable": p if favourable else 1 - p})
    return rows


def test_a_probability_column_that_contradicts_the_decisions_is_refused(tmp_path):
    """Bug caught: P(unfavourable) in the p_favourable column passed, and the same file said
    "treated less favourably" under the default fit and "more favourably" under
    fit.response=probability."""
    path = _csv(tmp_path, _probability_rows([0.1, 0.2, 0.3, 0.15] * 3))
    with pytest.raises(AuditError, match=r"column 'p_favourable' gives the row's own decision less "
                                         r"than even odds in 12 of the 12 rows that have both, "
                                         r"where decisions drawn from those probabilities would "
                                         r"do so in about 2 \(chance of 12 or more: 7e-10\).*"
                                         r"if the column holds the unfavourable one's, "
                                         r"write 1 - p"):
        design(_config(path), tmp_path / "prompts.parquet")
    assert not (tmp_path / "prompts.parquet").exists()


def test_decisions_sampled_from_their_probabilities_pass():
    """Fails when the rule refuses what sampling at a temperature gives: decisions drawn from
    p_favourable itself disagree with it in some rows, never on average. 200 files of 12 rows;
    the rule's bound, mean odds of the stated decision >= 1/2, holds for every p."""
    rng = np.random.default_rng(7)
    refused = 0
    for _ in range(200):
        p = rng.uniform(0.3, 0.7, 12)
        favourable = rng.random(12) < p
        labels = pl.DataFrame({"label": np.where(favourable, "favourable", "unfavourable"),
                               "p_favourable": p})
        try:
            check_decisions_agree(labels, "answers file a.csv")
        except AuditError:
            refused += 1
    # At most 1 in 1,000 by the rule's construction; 12% (23 of 200) under a rule that refused
    # whenever most rows' decisions were against the odds and their mean odds under 1/2.
    assert refused <= 2
    # One row against strong odds is what sampling gives now and then: not refused.
    check_decisions_agree(pl.DataFrame({"label": ["unfavourable"], "p_favourable": [0.9]}), "a")


def test_the_tail_is_the_binomial_tail_for_equal_chances_and_sums_for_unequal_ones():
    """Fails when the exact tail is off by one (P(more than k) for P(at least k)), or the
    approximation over EXACT_UP_TO events is centred wrong or drops its skewness term (then
    0.041 for the binomial's 0.046 at 40 of 6,000 events of chance 0.005, 10% low)."""
    for count, size, chance in ((3, 12, 0.2), (0, 5, 0.5), (40, 6000, 0.005),
                                (2600, 25000, 0.1), (12, 12, 0.3)):
        assert at_least(count, np.full(size, chance)) == pytest.approx(
            stats.binom.sf(count - 1, size, chance), rel=0.02, abs=1e-12)
    # Two events of chances 0.5 and 0.1: both happen with 0.05, at least one with 0.55.
    assert at_least(2, np.array([0.5, 0.1])) == pytest.approx(0.05)
    assert at_least(1, np.array([0.5, 0.1])) == pytest.approx(0.55)


def test_two_texts_of_one_cell_without_persona_ids_are_named_as_the_cause(tmp_path):
    """Bug caught: without persona_id the two texts of a cell became one persona, and the line
    counted every row involved ("128 rows") and told the user to number replicates the file
    already numbered."""
    rows = [row | {"replicate": 0} for row in _rows()]
    for row in rows:
        del row["persona_id"]
    path = _csv(tmp_path, rows + rows[:5])
    with pytest.raises(AuditError, match=r"^5 answer rows repeat another row's model, persona, "
                                         r"item and replicate .*give different personas their "
                                         r"own persona_id"):
        imported_answers(_config(path))


def test_ids_rewritten_as_numbers_are_named_so(tmp_path):
    """Bug caught: persona 1 against the table's "001" (and an item 0.0 against a bank's 0) sent
    the user to fix the table or choose the bank already chosen."""
    table = tmp_path / "personas.csv"
    table.write_text("persona_id,kind,descriptor,gender,race\n001,explicit,a Black woman,woman,"
                     "Black\n002,explicit,a White man,man,White\n")
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps({"persona_id": number, "item": "hiring_01",
                                        "decision": "HIRE"}) + "\n" for number in (1, 2)))
    with pytest.raises(AuditError, match=r"\(first: '1'\); '1' is the id '001' rewritten as a "
                                         r"number .*keep the ids as text"):
        imported_answers(_config(path, personas_file=str(table)))


def test_a_json_array_is_read_and_a_gzip_file_named(tmp_path):
    """Bugs caught: a `.json` file holding one JSON array (json.dump of the rows) was refused as
    "line 1 is not JSON", and a gzip file as "not text (NUL bytes ...)"."""
    rows = _rows()
    array = tmp_path / "answers.json"
    array.write_text(json.dumps(rows, indent=2))
    assert read_answers(array, "auto", None).height == len(rows)
    not_objects = tmp_path / "numbers.json"
    not_objects.write_text("[1, 2]")
    with pytest.raises(AuditError, match=r"element 1 of its JSON array is not an object"):
        read_answers(not_objects, "auto", None)
    packed = tmp_path / "answers.csv"
    packed.write_bytes(gzip.compress(b"race,item,decision\nBlack,hiring_01,HIRE\n"))
    with pytest.raises(AuditError, match=r"it is gzip-compressed: decompress it"):
        read_answers(packed, "auto", None)
    with pytest.raises(AuditError, match=r"answers.csv.gz is compressed: decompress it"):
        read_answers(tmp_path / "answers.csv.gz", "auto", None)
