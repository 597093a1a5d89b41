"""What a run's tags say about where it came from: untracked files make a checkout dirty
(review2/tracking.md #4)."""

from __future__ import annotations

import subprocess

from audit.tracking.mlflow import provenance


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
    assert provenance(tmp_path)["git.dirty"] == "false"
    (tmp_path / "my_profiles.csv").write_text("persona_id\n")
    assert provenance(tmp_path)["git.dirty"] == "true"
