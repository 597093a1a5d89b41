"""Every `python -m audit ...` and `python -m audit.plan ...` command the documentation shows
composes: its overrides name keys and options that exist, with values of the right type.

A reader copies these commands; a key renamed in the code and not on the page (the configuration
page named a default fit that was no longer the default without any test failing) would meet
them as a config error. Composing in-process takes a fraction of a second a command; the README's
smoke examples are run for real by test_readme_smoke.py.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import open_dict

from audit.__main__ import CONF_DIR
from audit.methods.configs import register_configs, to_audit_config

from doc_blocks import PROJECT_ROOT, Block, commands, documentation_files, fenced_blocks

# The commands that compose the audit's own config ("config"); the other entry points parse
# their own arguments and are covered by their CLI tests.
COMPOSING = re.compile(r"^(?:\.venv/bin/)?python -m audit(?:\.plan)?(?=\s|$)")
SHELL_LANGUAGES = {"bash", "sh", "shell", "console", ""}
# A value that is the reader's own (a model file they write, a placeholder) cannot compose here.
READERS_OWN = re.compile(r"\bmy_\w+|\b(?:NAME|DIR|PATH|DATE|TIME\w*|ID|RUN)\b")
NOT_OVERRIDES = {"-m", "--multirun", "--cfg", "job", "hydra", "all"}


def documented_commands() -> list[tuple[str, str]]:
    """(page:line, command) for every composing command in a shell block of the documentation."""
    found = []
    for page in documentation_files():
        for block in fenced_blocks(page.read_text()):
            if block.language not in SHELL_LANGUAGES:
                continue
            for command in commands(block):
                if COMPOSING.match(command):
                    found.append((f"{page.relative_to(PROJECT_ROOT)}:{block.line}", command))
    return found


def split_values(value: str) -> list[str]:
    """A multirun value's choices: `a,b` -> [a, b]; commas inside [...] or quotes stay."""
    values, depth, quote, current = [], 0, None, ""
    for char in value:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            values.append(current)
            current = ""
            continue
        current += char
    return [*values, current]


def compositions(command: str) -> list[list[str]]:
    """The override lists a command composes: one, or for a multirun one per swept choice (each
    choice with the other keys at their first)."""
    tokens = shlex.split(command)[3:]
    overrides = [token for token in tokens if token not in NOT_OVERRIDES and "=" in token
                 and not READERS_OWN.search(token)]
    if not ({"-m", "--multirun"} & set(tokens)):
        return [overrides]
    swept = {index: split_values(token.split("=", 1)[1]) for index, token in enumerate(overrides)
             if not token.startswith(("hydra.", "+sweep")) and len(split_values(
                 token.split("=", 1)[1])) > 1}
    first = [f"{token.split('=', 1)[0]}={swept[index][0]}" if index in swept else token
             for index, token in enumerate(overrides)]
    runs = [first]
    for index, choices in swept.items():
        key = overrides[index].split("=", 1)[0]
        runs += [[*first[:index], f"{key}={choice}", *first[index + 1:]] for choice in choices[1:]]
    return runs


def compose_audit(overrides: list[str]):
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        # paths.output_dir reads the Hydra run directory, which only a Hydra app sets.
        composed = compose("config", overrides=["paths.output_dir=out", *overrides],
                           return_hydra_config=True)
    with open_dict(composed):
        del composed["hydra"]
    return to_audit_config(composed)


COMMANDS = documented_commands()


def test_the_documentation_shows_composing_commands():
    # The collector found the pages' commands: a regex that matched none would pass every test.
    pages = {where.split(":")[0] for where, _ in COMMANDS}
    assert len(COMMANDS) > 40
    assert {"README.md", "docs/adaptive.md", "docs/methods/rasch.md"} <= pages


@pytest.mark.parametrize(("where", "command"), COMMANDS, ids=[where for where, _ in COMMANDS])
def test_every_documented_command_composes(where: str, command: str):
    for overrides in compositions(command):
        compose_audit(overrides)


@pytest.mark.parametrize(("command", "expected"), [
    ("python -m audit model=my_vllm design.replicates=3", [["design.replicates=3"]]),
    ("python -m audit -m model=smollm2,smollm2_greedy fit=rasch,rasch_seed",
     [["model=smollm2", "fit=rasch"], ["model=smollm2_greedy", "fit=rasch"],
      ["model=smollm2", "fit=rasch_seed"]]),
    ("python -m audit.plan plan.replicates=[2,4,8]", [["plan.replicates=[2,4,8]"]]),
    ("python -m audit -m +sweep=models hydra.launcher.n_jobs=2",
     [["+sweep=models", "hydra.launcher.n_jobs=2"]]),
])
def test_a_command_is_read_as_its_overrides(command: str, expected: list[list[str]]):
    assert compositions(command) == expected


def test_a_renamed_key_fails_to_compose():
    # The check itself can fail: a key the config does not have stops the composition.
    with pytest.raises(Exception, match="replicatez"):
        compose_audit(["design.replicatez=2"])


def test_continuation_lines_are_one_command():
    text = "python -m audit items=smoke \\\n    judge=rules_only  # two lines\n# a comment\n"
    block = Block(language="bash", text=text, line=1, marker="")
    assert commands(block) == ["python -m audit items=smoke judge=rules_only"]


def test_readers_own_values_are_left_out():
    assert READERS_OWN.search("model=[my_ollama,qwen_coder_0_5b]")
    assert READERS_OWN.search("plan.from_run=outputs/DATE/TIME")
    assert not READERS_OWN.search("model=qwen_coder_0_5b")
    assert Path(CONF_DIR).is_dir()


# A word holding `[` that no quote opens before it: zsh (macOS's shell) reads it as a file
# pattern and stops the command with "no matches found" before Python starts.
UNQUOTED_LIST = re.compile(r"(?:^|\s)[^\s'\"]*=\[")


def test_every_documented_list_override_is_quoted():
    """Bug caught (docs review 2026-12-02): `python -m audit model=[a,b]` and six more commands
    on the pages failed in zsh; bash passes such a word through, so nothing here noticed."""
    unquoted = [f"{where}: {command}" for where, command in COMMANDS
                if UNQUOTED_LIST.search(command)]
    assert not unquoted, unquoted
    assert UNQUOTED_LIST.search("python -m audit model=[a,b]")
    assert not UNQUOTED_LIST.search("python -m audit 'model=[a,b]' \"fit.attributes=[race]\"")
