"""What a run's tags say about where it came from: config.hash is about the audit, not where its
files went (review2/tracking.md #3), and untracked files make a checkout dirty (#4)."""

from __future__ import annotations

import subprocess

from hydra import compose, initialize_config_dir

from audit.config import CONF_DIR
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.run_identity import flat_config, run_tags
from audit.tracking.mlflow import config_hash, provenance

register_configs()


def composed(*overrides: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=list(overrides)))


def test_two_output_dirs_give_one_config_hash_and_no_absolute_path_param(tmp_path):
    """config.hash hashed paths.output_dir (Hydra's absolute, timestamped folder): the same
    audit under `python -m audit` and `dvc repro` had two hashes, and the param was a machine
    path."""
    hashes, params = [], []
    for folder, uri in (("outputs/2026-11-28/17-57-28", "sqlite:///a.db"),
                        ("pipeline", "sqlite:///b.db")):
        cfg = composed(f"paths.root_dir={tmp_path}", f"paths.output_dir={tmp_path / folder}",
                       f"tracking.tracking_uri={uri}")
        flat = flat_config(cfg)
        hashes.append(run_tags(cfg, flat)["config.hash"])
        params.append(flat["paths.output_dir"])
    assert hashes[0] == hashes[1]
    assert params == ["outputs/2026-11-28/17-57-28", "pipeline"]
    assert config_hash({"fit.draws": "100"}) != config_hash({"fit.draws": "200"})


def test_an_output_dir_outside_the_root_is_a_tag_not_a_param(tmp_path):
    cfg = composed(f"paths.root_dir={tmp_path / 'project'}", f"paths.output_dir={tmp_path / 'x'}")
    flat = flat_config(cfg)
    assert "paths.output_dir" not in flat
    assert run_tags(cfg, flat)["paths.output_dir"] == str(tmp_path / "x")


def test_an_untracked_file_marks_the_checkout_dirty_and_an_ignored_one_does_not(tmp_path):
    """`git status --untracked-files=no` called a checkout with a new persona file clean."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / ".gitignore").write_text("outputs/\n")
    git("add", ".gitignore")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "run.txt").write_text("ignored")
    (tmp_path / "dvc.lock").write_text("schema: '2.0'\n")  # `dvc repro` writes it mid-run
    assert provenance(tmp_path)["git.dirty"] == "false"
    (tmp_path / "my_profiles.csv").write_text("persona_id\n")
    assert provenance(tmp_path)["git.dirty"] == "true"
