"""The README is a doorway: short, opening with the two commands a fresh machine needs. Every path
the documentation cites exists, and every example config file it shows composes."""

from __future__ import annotations

import glob
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from doc_blocks import PROJECT_ROOT, README, commands, documentation_files, fenced_blocks

MAX_README_LINES = 300
OPENING_LINES = 20
# A path into the repository, cited in prose or in a command. `conf/...` is the package's config
# folder (src/audit/conf, which a user's ./conf extends); `./conf/...` is a user's own file, an
# example, and is not matched (the character before it is a slash).
CITED_PATH = re.compile(
    r"(?<![\w./~-])((?:src|tests|benchmarks|data|docs|conf)/[A-Za-z0-9_.*/-]*[A-Za-z0-9_*/])")
# Placeholders in a cited path (`methods/NAME/verdict.py`, `conf/sweep/NAME.yaml`): any file there.
PLACEHOLDERS = {"NAME", "DATE", "TIME", "STAGE", "DIR", "OUT", "PATH", "ID", "N"}
# An example config file a page shows starts with its place in the user's conf folder.
EXAMPLE_CONF = re.compile(r"^# \./conf/(model|judge)/(\w+)\.yaml$")


def test_the_readme_is_at_most_300_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines: move detail into docs/ (the README is a doorway)")


def test_the_readme_opens_with_make_audit_and_make_test():
    first = fenced_blocks(README.read_text())[0]
    assert first.line <= OPENING_LINES, f"the first code block starts on line {first.line}"
    assert commands(first) == ["make audit", "make test"]


def _existing(cited: str) -> bool:
    relative = cited.rstrip("/")
    if relative.startswith("conf"):
        relative = "src/audit/" + relative
    parts = [part.partition(".") for part in relative.split("/")]
    pattern = "/".join(("*" if stem in PLACEHOLDERS else stem) + dot + suffix
                       for stem, dot, suffix in parts)
    return bool(glob.glob(str(PROJECT_ROOT / pattern)))


def test_every_path_the_documentation_cites_exists():
    missing = [f"{path.relative_to(PROJECT_ROOT)}:{number}: {cited}"
               for path in documentation_files()
               for number, line in enumerate(path.read_text().splitlines(), 1)
               for cited in CITED_PATH.findall(line) if not _existing(cited)]
    assert not missing, "cited paths that do not exist:\n" + "\n".join(missing)


def test_the_path_check_reads_placeholders_and_user_files():
    """The pattern the check above relies on: a path it could not resolve would pass unseen."""
    line = ("see `src/audit/methods/NAME/verdict.py`, `conf/sweep/NAME.yaml`, "
            "`conf/model/vllm.yaml`, `./conf/model/my_vllm.yaml`, data/README.md and "
            "tests/cli/test_gone.py.")
    cited = CITED_PATH.findall(line)
    assert cited == ["src/audit/methods/NAME/verdict.py", "conf/sweep/NAME.yaml",
                     "conf/model/vllm.yaml", "data/README.md", "tests/cli/test_gone.py"]
    assert [_existing(path) for path in cited] == [True, True, True, True, False]


def _example_confs() -> dict[Path, list[tuple[str, str, dict]]]:
    """Per documentation file: (group, name, settings) of each example config file it shows."""
    found: dict[Path, list[tuple[str, str, dict]]] = {}
    for path in documentation_files():
        for block in fenced_blocks(path.read_text()):
            header = EXAMPLE_CONF.match(block.text.splitlines()[0]) if block.text else None
            if block.language == "yaml" and header:
                group, name = header.groups()
                found.setdefault(path, []).append((group, name, yaml.safe_load(block.text)))
    return found


def test_the_readme_shows_a_model_file_and_a_judge_file():
    groups = {group for group, _, _ in _example_confs().get(README, [])}
    assert groups == {"model", "judge"}


@pytest.mark.parametrize("page", sorted(_example_confs(), key=str),
                         ids=lambda page: str(page.relative_to(PROJECT_ROOT)))
def test_every_example_config_file_composes_as_shown(page: Path, tmp_path: Path):
    """Each file written where the page says, then composed by `python -m audit.params` from that
    folder: a flat model file, a misspelt key or a wrong type would stop it with an error."""
    examples = _example_confs()[page]
    chosen: dict[str, list[str]] = {}
    for group, name, settings in examples:
        target = tmp_path / "conf" / group / f"{name}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(settings))
        chosen.setdefault(group, []).append(name)
    overrides = [f"model=[{','.join(chosen['model'])}]"] if "model" in chosen else []
    overrides += [f"judge={name}" for name in chosen.get("judge", [])]
    done = subprocess.run([sys.executable, "-m", "audit.params", *overrides,
                           "--output", str(tmp_path / "params.yaml")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    params = yaml.safe_load((tmp_path / "params.yaml").read_text())
    for group, name, settings in examples:
        composed = params["model"][name] if group == "model" else params["judge"]
        shown = settings[name] if group == "model" else settings
        assert _as_composed(shown, composed) == shown, f"{page.name}: {group} {name}"


def _as_composed(shown: dict, composed: dict) -> dict:
    """The composed values of the keys a page shows (nested), to compare with what it shows."""
    return {key: _as_composed(value, composed.get(key) or {}) if isinstance(value, dict)
            else composed.get(key) for key, value in shown.items()}
