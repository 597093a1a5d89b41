"""How the verdict reads a finished run's folder and says its outcome (audit.methods.verdict):
the recorded settings, the folder guards and the one-phrase verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from verdict_fixtures import counterfactual_run, record

from audit.methods.checks import VerdictError
from audit.methods.configs import VerdictConfig
from audit.methods.verdict import judge_run, recorded_setting


def test_a_recorded_setting_that_cannot_be_resolved_is_none(tmp_path: Path) -> None:
    """Mutation review 2026-12-06: a recorded setting whose interpolation names no key is read
    as no setting (None), not an OmegaConf error, and the run's other settings still read."""
    (tmp_path / "config.yaml").write_text("method: dif\nfit:\n  alpha: ${missing.key}\n"
                                          "alpha: 0.1\n")
    assert recorded_setting(tmp_path, "fit.alpha") is None
    assert recorded_setting(tmp_path, "alpha") == 0.1


def test_a_run_in_a_folder_named_like_a_stage_is_judged_without_sibling_stages(
        tmp_path: Path) -> None:
    """Mutation review 2026-12-06: a run kept in a folder called `report`, whose parent holds a
    config.yaml but no other stage folder, is a run of its own, not a run's report folder."""
    record(tmp_path, "counterfactual")
    run = counterfactual_run(tmp_path / "report", effect=0.6)
    assert judge_run(run, VerdictConfig())


def test_a_recorded_config_omegaconf_refuses_names_the_first_line_of_its_error(
        tmp_path: Path) -> None:
    """Mutation review 2026-12-06: a config.yaml with a `null:` key loads as YAML but not as
    OmegaConf; the message names what is wrong (its first line), not `object_type=dict`."""
    (tmp_path / "config.yaml").write_text("method: rasch\nnull: 1\n")
    with pytest.raises(VerdictError, match=r"cannot read the run's config at .*: Incompatible "
                                           r"key type 'NoneType'; the file is damaged") as raised:
        judge_run(tmp_path, VerdictConfig())
    assert "object_type" not in str(raised.value) and "\n" not in str(raised.value)


def test_a_folder_with_only_stage_folders_is_a_run_that_did_not_finish(tmp_path: Path) -> None:
    """Mutation review 2026-12-06: a `dvc repro` run stopped before its report stage leaves
    stage folders (respond/) and no table at the top; it is named a run that did not finish,
    with the rerun fix, not a folder of unknown kind."""
    (tmp_path / "respond").mkdir()
    with pytest.raises(VerdictError, match=r"the run there did not finish \(it has stage "
                                           r"folders but no config\.yaml, which its report "
                                           r"stage writes\): rerun the same command"):
        judge_run(tmp_path, VerdictConfig())
