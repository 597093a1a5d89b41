"""docs/configuration.md's table of config groups lists what Hydra composes: every option a group
has and the one the default audit takes.

The page had drifted twice without a failing test: it named `rasch` the default fit after the
default became `population`, and left out the discrim-eval items and personas.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from audit.__main__ import CONF_DIR
from audit.methods.configs import register_configs

from doc_blocks import PROJECT_ROOT

PAGE = PROJECT_ROOT / "docs" / "configuration.md"


def _without_parentheses(cell: str) -> str:
    """The cell with every (...) removed, nested ones included: options sit outside them."""
    kept, depth = [], 0
    for char in cell:
        depth += char == "("
        if depth == 0:
            kept.append(char)
        depth -= char == ")" and depth > 0
    return "".join(kept)


def group_rows(text: str) -> dict[str, tuple[list[str], str | None]]:
    """group -> (options listed, the option marked '(default)') from the '## Groups' table."""
    section = text.split("\n## Groups\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        group = re.fullmatch(r"`([\w/]+)`", cells[0]) if len(cells) >= 3 else None
        if not group:
            continue
        default = re.search(r"`([\w.-]+)` \(default\)", cells[1])
        options = re.findall(r"`([\w.-]+)`", _without_parentheses(cells[1]))
        rows[group.group(1)] = (options, default.group(1) if default else None)
    return rows


def composed_groups() -> dict[str, tuple[list[str], str | None]]:
    """group -> (its options, the default config's choice) as Hydra sees them."""
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        defaults = yaml.safe_load((Path(CONF_DIR) / "config.yaml").read_text())["defaults"]
        chosen = {key: value for entry in defaults if isinstance(entry, dict)
                  for key, value in entry.items()}
        return {group: (sorted(loader.get_group_options(group)), chosen.get(group))
                # hydra/...: Hydra's own groups, whose options come from installed plugins.
                for group in loader.list_groups("") if group != "hydra"}


def test_the_group_table_lists_every_option_and_the_default():
    listed = group_rows(PAGE.read_text())
    composed = composed_groups()
    missing_groups = sorted(set(composed) - set(listed))
    assert not missing_groups, f"docs/configuration.md lists no row for {missing_groups}"
    for group, (options, default) in composed.items():
        shown, shown_default = listed[group]
        assert sorted(shown) == options, (group, shown, options)
        # An option named `default` needs no "(default)" after it.
        if shown_default is None and "default" in shown:
            shown_default = "default"
        assert shown_default == default, (group, shown_default, default)


@pytest.mark.parametrize(("row", "expected"), [
    ("| `fit` | `population` (default), `rasch` | x |", (["population", "rasch"], "population")),
    ("| `items` | `default` (12), `smoke` (3, see `items=smoke` (this)) | x |",
     (["default", "smoke"], None)),
    ("| `sweep` | `models`, `fits` | presets, as `+sweep=NAME` |", (["models", "fits"], None)),
])
def test_a_row_reads_its_options_outside_parentheses(row: str, expected):
    text = f"# page\n\n## Groups\n\n| group | options | what |\n|---|---|---|\n{row}\n\n## Next\n"
    group = re.match(r"\| `(\w+)`", row).group(1)
    assert group_rows(text)[group] == expected
