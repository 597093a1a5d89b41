"""Like-with-like level comparisons for fits without level effects, and aliased attributes.

Fits without level effects (``rasch``, ``twopl``, ``rasch_seed``, ``hurdle``, and ``abstention``,
which is rasch fitted twice) read a level's favourability from the thetas of its personas. A plain
mean over them is a marginal mean over whatever the other attributes happen to be: with no male
White persona, "male" means mostly Black, and a race gap shows up as a gender gap (a planted race
gap of -3 and no gender gap read as a gender gap of +1.24, `different`). So a contrast of levels
a and b of one attribute reads cells of the other contrasted attributes: the persona thetas are
averaged within each cell, and the cells present at both a and b are averaged with equal weight.
In a balanced design this is the plain mean; in an unbalanced one it compares like with like. A
contrast whose levels share no cell cannot compare like with like and is left out with a warning.

Attributes that move together among the real personas (every level of one goes with a single
level of the other) cannot be told apart by any model: the explanatory models spread the gap
between them with wide intervals, the plain ones share no cell. ``warn_aliased`` says so once,
before fitting.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from itertools import combinations, permutations

import polars as pl

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BalancedContrast:
    """Levels a and b of one attribute over the cells (of the other attributes) both have: per
    common cell, the respondents at each level."""

    attribute: str
    level_a: str
    level_b: str
    cells_a: tuple[tuple[str, ...], ...]
    cells_b: tuple[tuple[str, ...], ...]

    @property
    def n_a(self) -> int:
        return sum(len(cell) for cell in self.cells_a)

    @property
    def n_b(self) -> int:
        return sum(len(cell) for cell in self.cells_b)

    @property
    def floor_factor(self) -> float:
        """The sd of the gap between the two cell-balanced means when every persona varies with
        sd 1 around its group: sqrt(1/n_a + 1/n_b) when the cells are equally filled, more when
        a few personas carry a cell on their own."""
        inverse = sum(1.0 / len(cell) for cell in (*self.cells_a, *self.cells_b))
        return math.sqrt(inverse) / len(self.cells_a)


def _cells(frame: pl.DataFrame, attribute: str, level: str,
           others: tuple[str, ...]) -> dict[tuple, tuple[str, ...]]:
    """The respondents at one level, by their cell of the other attributes (a missing value is a
    cell of its own: a persona without a race is compared with others without one)."""
    members = frame.filter(pl.col(attribute) == level)
    cells: dict[tuple, list[str]] = {}
    for row in members.iter_rows(named=True):
        cells.setdefault(tuple(row[other] for other in others), []).append(row["respondent"])
    return {key: tuple(names) for key, names in cells.items()}


def _cell_words(others: tuple[str, ...], keys) -> str:
    words = sorted(", ".join(f"{other} {value if value is not None else 'none'}"
                             for other, value in zip(others, key)) for key in keys)
    return "; ".join(words) if others else "all"


def balanced_contrasts(frame: pl.DataFrame, attributes: tuple[str, ...], model_name: str,
                       ) -> tuple[list[BalancedContrast], list[str]]:
    """Every pair of levels of every attribute for one audited model, over their common cells;
    and a description of each pair left out because its levels share no cell.

    ``frame`` is the respondent table (respondent, model_name, the attributes), levels as
    strings."""
    frame = frame.filter(pl.col("model_name") == model_name)
    contrasts: list[BalancedContrast] = []
    left_out: list[str] = []
    for attribute in attributes:
        others = tuple(other for other in attributes if other != attribute)
        levels = sorted(frame.get_column(attribute).drop_nulls().unique().to_list())
        by_level = {level: _cells(frame, attribute, level, others) for level in levels}
        for level_a, level_b in combinations(levels, 2):
            common = sorted(set(by_level[level_a]) & set(by_level[level_b]),
                            key=lambda key: tuple("" if v is None else str(v) for v in key))
            if not common:
                left_out.append(
                    f"{model_name} {attribute} {level_a} vs {level_b} ({level_a}: "
                    f"{_cell_words(others, by_level[level_a])}; {level_b}: "
                    f"{_cell_words(others, by_level[level_b])})")
                continue
            contrasts.append(BalancedContrast(
                attribute, level_a, level_b,
                tuple(by_level[level_a][key] for key in common),
                tuple(by_level[level_b][key] for key in common)))
    return contrasts, left_out


def warn_left_out(left_out: list[str]) -> None:
    if left_out:
        logger.warning(
            "no persona cell of the other attributes has personas at both levels of: %s; these "
            "contrasts are left out, because their gap would be the other attributes' gap (add "
            "personas that cross the attributes, or fit=population, whose level effects are "
            "additive)", " | ".join(left_out))


def aliased_pairs(real: pl.DataFrame, attributes: tuple[str, ...]) -> list[str]:
    """Pairs of attributes where every level of one goes with a single level of the other
    among ``real`` (the real personas' rows), each described once."""
    found: list[str] = []
    seen: set[frozenset[str]] = set()
    for first, second in permutations(attributes, 2):
        pair = frozenset((first, second))
        if pair in seen:
            continue
        both = real.drop_nulls([first, second]).select(first, second).unique()
        if both.get_column(second).n_unique() < 2:
            continue  # the two never vary together: nothing to confuse
        partners = both.group_by(first).agg(pl.col(second).unique().sort()).sort(first)
        if all(len(levels) == 1 for levels in partners.get_column(second).to_list()):
            seen.add(pair)
            pairs = ", ".join(f"{level}: {levels[0]}" for level, levels in partners.iter_rows())
            found.append(f"every {first} level goes with one {second} level ({pairs}), so the "
                         f"{second} contrasts cannot be told apart from {first} contrasts")
    return found


def aliasing_warnings(real: pl.DataFrame, attributes: tuple[str, ...]) -> list[str]:
    """What warn_aliased logs, as sentences the report and the run's summary say too: logged
    alone, two contrasts that are one comparison (the smoke design's gender and race) stood in
    the summary, the HTML and the CI verdict as two findings."""
    return [f"among the real personas {description}: a gap in one is a gap in the other, "
            "whichever fit reads it (add personas that cross the two attributes to separate them)"
            for description in aliased_pairs(real, attributes)]


def warn_aliased(real: pl.DataFrame, attributes: tuple[str, ...]) -> None:
    for warning in aliasing_warnings(real, attributes):
        logger.warning("%s", warning)
