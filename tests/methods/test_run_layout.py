"""Where a finished run keeps its files (audit.methods.layout): stage names and their older
aliases, a file in either layout, and what to pass instead of a folder that holds runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.errors import AuditError
from audit.methods.layout import (
    STAGE_NAMES,
    found_run_file,
    run_file,
    runs_inside,
    stage_name,
)


def test_each_stage_name_is_itself_and_each_older_alias_is_its_slot():
    """Mutation review 2026-12-06: `judge` and `judge_gold` were the scoring stage, `fit` the
    analysis; a current name is itself."""
    assert [stage_name(name) for name in STAGE_NAMES] == list(STAGE_NAMES)
    assert [stage_name(name) for name in ("judge", "judge_gold", "fit")] == [
        "score", "score", "analyse"]


def test_a_mistyped_stage_is_refused_with_the_closest_name():
    """Mutation review 2026-12-06: the refusal lists the stages and suggests the closest."""
    with pytest.raises(AuditError, match=r"^unknown stage 'reprot': use one of design, respond, "
                                         r"score, analyse, report \(did you mean 'report'\?\)$"):
        stage_name("reprot")


def test_a_file_at_the_top_of_the_run_is_read_before_a_stage_folders(tmp_path: Path):
    """Mutation review 2026-12-06: DIR/NAME first, then DIR/STAGE/NAME; the flat path when
    neither exists."""
    assert run_file(tmp_path, "t.csv") == tmp_path / "t.csv"
    (tmp_path / "analyse").mkdir()
    (tmp_path / "analyse" / "t.csv").write_text("a\n")
    assert run_file(tmp_path, "t.csv") == tmp_path / "analyse" / "t.csv"
    (tmp_path / "t.csv").write_text("a\n")
    assert run_file(tmp_path, "t.csv") == tmp_path / "t.csv"


def test_a_folder_named_like_the_file_is_not_the_runs_file(tmp_path: Path):
    """Mutation review 2026-12-06: found_run_file wants a file; a folder called config.yaml is
    none."""
    (tmp_path / "config.yaml").mkdir()
    assert found_run_file(tmp_path, "config.yaml") is None


def _finished(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text("method: iat\n")


def test_a_sweep_of_more_than_ten_jobs_lists_the_first_ten_in_job_order(tmp_path: Path):
    """Mutation review 2026-12-06: eleven jobs list 0 to 9 and `...`; ten list all of them."""
    for job in range(11):
        _finished(tmp_path / "eleven" / str(job))
    assert runs_inside(tmp_path / "eleven").endswith(
        "(jobs: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, ...)")
    for job in range(10):
        _finished(tmp_path / "ten" / str(job))
    assert runs_inside(tmp_path / "ten").endswith("(jobs: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)")


def test_runs_with_names_besides_job_numbers_are_not_a_sweep(tmp_path: Path):
    """Mutation review 2026-12-06: a folder holding runs `0` and `best` is not a sweep's
    folder: it holds two runs. Bug caught: it called `0` "the latest", which no name says; only
    Hydra's time-named runs (outputs/DATE/HH-MM-SS) are."""
    for name in ("0", "best"):
        _finished(tmp_path / name)
    assert runs_inside(tmp_path) == ("it holds 2 runs (folders of finished runs inside it): pass "
                                     f"one, e.g. {tmp_path / 'best'}")


def test_a_folder_holding_one_run_says_one_run(tmp_path: Path):
    """Mutation review 2026-12-06: `1 run`, not `1 runs`."""
    _finished(tmp_path / "12-00-00")
    assert runs_inside(tmp_path).startswith("it holds 1 run (folders of finished runs")


def test_a_stage_folder_of_a_run_is_no_run_inside_it(tmp_path: Path):
    """Bug caught (bad-input review 2026-12-06): a `dvc repro` run keeps config.yaml in report/;
    missing its prompts, it was "not one run: pass RUN/report", and RUN/report then "a folder
    inside a run: pass RUN", a loop. A stage folder (or an older alias) is not a run."""
    for stage in ("report", "fit"):
        _finished(tmp_path / stage)
    assert runs_inside(tmp_path) is None
    _finished(tmp_path / "best")
    assert runs_inside(tmp_path).startswith("it holds 1 run (folders of finished runs")
