"""benchmarks/bench_shared.py, bench_calibration.score and bench_adaptive.compare: signed
decisions, sampler seeds, the checked audits and the targets' PASS/FAIL lines."""

from __future__ import annotations

import math

import polars as pl
import pytest


@pytest.fixture(scope="module")
def shared(script):
    return script("bench_shared")


def contrasts(planted_mean: float, planted_decision: str) -> pl.DataFrame:
    """The planted contrast (race Black vs White) and one with no planted gap."""
    return pl.DataFrame({
        "model_name": ["m", "m"], "attribute": ["race", "gender"],
        "level_a": ["Black", "man"], "level_b": ["White", "woman"],
        "mean": [planted_mean, 0.1], "sd": [0.5, 0.5],
        "hdi_low": [planted_mean - 1.0, -0.9], "hdi_high": [planted_mean + 1.0, 1.1],
        "decision": [planted_decision, "undecided"], "rope_high": [0.18, 0.18]})


def fails_where_different(table: pl.DataFrame) -> dict:
    """power.ci_failures' answer for a table whose CI fails exactly on its `different`s."""
    return {(row["model_name"], row["attribute"], row["level_a"], row["level_b"]):
            row["decision"] == "different" for row in table.iter_rows(named=True)}


def test_a_wrong_sign_different_is_neither_agreement_nor_power(monkeypatch, script):
    """Bug caught (review 2, bench #5): bench_adaptive compared decision strings only, so an
    adaptive -1.5 `different` against a fixed +1.5 `different` (planted +1) counted as
    agreement, as a right agreement and as power."""
    bench = script("bench_adaptive")
    monkeypatch.setattr(bench, "ci_failures", fails_where_different)
    scored = bench.compare(contrasts(1.5, "different"), contrasts(-1.5, "different"), 1.0)
    assert scored["fixed_decided"] == 1 and scored["fixed_right"] == 1
    assert scored["agreed"] == 0 and scored["agreed_right"] == 0
    assert scored["power_fixed"] == 1.0 and scored["power_adaptive"] == 0.0
    assert scored["wrong_sign_adaptive"] == 1.0 and scored["wrong_sign_fixed"] == 0.0


def test_calibration_counts_power_only_with_the_planted_sign(monkeypatch, script):
    """Bug caught (review 2, bench #5): bench_calibration.score counted a `different` and a CI
    failure of the planted contrast as power whatever its sign."""
    bench = script("bench_calibration")
    monkeypatch.setattr(bench, "ci_failures", fails_where_different)
    wrong = bench.score(contrasts(-1.5, "different"), 1.0)
    assert (wrong["different"], wrong["ci_fails"], wrong["wrong_sign"]) == (0.0, 0.0, 1.0)
    right = bench.score(contrasts(1.5, "different"), 1.0)
    assert (right["different"], right["ci_fails"], right["wrong_sign"]) == (1.0, 1.0, 0.0)
    assert wrong["ci_outcome"] != right["ci_outcome"]  # the fast-fit check tells them apart


def test_sampler_seeds_differ_by_cell_and_by_run(shared):
    """Bug caught (review 2, bench #7): fit.seed was the audit's loop index, so audit i had the
    same MCMC seed and imputed judge rates in every cell and every --seed run."""
    seeds = {shared.fit_seed(run, cell, index) for run in (1, 2) for cell in range(3)
             for index in range(4)}
    assert len(seeds) == 2 * 3 * 4
    assert shared.fit_seed(1, 2, 3) == shared.fit_seed(1, 2, 3)  # a rerun draws the same
    assert all(0 <= seed < 2**31 for seed in seeds)


def test_the_checked_audits_reach_every_cell(shared):
    """Bug caught (review 2, bench #3): the first --check audits of the loop were all of the
    first cell (null designs at text sd 0.3), where a fast fit can hardly disagree."""
    chosen = shared.checked_audits(cells=9, seeds=60, check=10)
    assert len(chosen) == 10
    assert {cell for cell, _ in chosen} == set(range(9))
    assert sorted(index for cell, index in chosen if cell == 0) == [0, 30]  # by stride
    assert shared.checked_audits(cells=3, seeds=2, check=100) == {
        (cell, index) for cell in range(3) for index in range(2)}
    assert shared.checked_audits(cells=3, seeds=5, check=0) == set()


def test_a_target_fails_on_nan_and_says_which(shared):
    """Bug caught (review 2, bench #2): --quick printed decision_agreement=nan with every other
    figure on target and no verdict; a figure no run measured must FAIL."""
    targets = [shared.at_most("ratio", 0.5, "issue 36"),
               shared.at_least("agreement", 0.9, "issue 36")]
    lines = shared.target_lines({"ratio": 0.5, "agreement": math.nan}, targets)
    assert lines[0].startswith("target ratio=0.500 <= 0.5 (issue 36)") and lines[0].endswith(
        "PASS")
    assert lines[1].endswith("FAIL")
    assert shared.target_lines({"ratio": 0.51, "agreement": 0.9}, targets)[0].endswith("FAIL")


def test_wilson_interval_matches_a_known_value(shared):
    """The coverage target reads this interval: 521 of 540 is 0.946-0.977 (RESULTS.md)."""
    low, high = shared.wilson(521, 540)
    assert (round(low, 3), round(high, 3)) == (0.946, 0.977)
