"""benchmarks/bench_calibration.py: --quick runs and reports its line; --prior-spreads draws the
spreads from the population model's own prior, --prior-others the other groups from the level
prior."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pymc as pm
import pytest
from scipy import stats

from audit.methods.rasch.irt import explanatory
from audit.methods.rasch.simulation import DEFAULT_GENDERS, DEFAULT_RACES

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_calibration.py"


@pytest.mark.slow
def test_quick_calibration_run_ends_with_its_result_line():
    """About 2 min on 2 shared cores (one compile, a few dozen short fits, a power arm). Fails
    when the benchmark breaks (an API it uses moved) or its RESULT line loses a figure, prints
    one out of range, or comes without its targets' PASS/FAIL lines."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick"], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    match = re.fullmatch(r"RESULT coverage_group_gap=(\S+) false_different_rate=(\S+) "
                         r"power_1logit=(\S+) power_3logit=(\S+) plan_width_error=(\S+) "
                         r"plan_power_error=(\S+)", lines[-1])
    assert match, lines[-1]
    coverage, false_rate, power, power_3, width_error, power_error = (
        float(value) for value in match.groups())
    assert 0.0 <= coverage <= 1.0 and 0.0 <= false_rate <= 1.0 and 0.0 <= power_3 <= 1.0
    assert math.isnan(power)  # --quick plants no 1-logit gap
    assert 0.0 <= width_error < 1.0
    assert 0.0 <= power_error <= 1.0  # the power arm's gap, planned by the pilots at 0.6
    assert "coverage agrees" in done.stdout
    # A PASS/FAIL line per target, just before the RESULT line.
    verdicts = [line for line in lines if line.startswith("target ")]
    assert [line.split("=")[0] for line in verdicts] == [
        "target coverage_group_gap", "target false_different_rate", "target power_3logit",
        "target plan_width_error", "target plan_power_error"]
    assert all(line.endswith(("PASS", "FAIL")) for line in verdicts)


def test_prior_spreads_are_drawn_from_the_population_models_own_prior(script):
    """--prior-spreads tests the fixed text sds' over-coverage against truths from the prior, so
    its draws must follow the prior the fit declares (explanatory._shared_spreads), not a copy
    of it. Fails when the two drift apart: a text sd drawn signed or at another scale, the null
    spread without the ratio's spread, or a model prior changed without the benchmark."""
    prior_spreads = script("bench_calibration").prior_spreads  # loads the script: once
    rng = np.random.default_rng(20261130)
    drawn = np.array([prior_spreads(rng) for _ in range(8000)])
    with pm.Model(coords={"model": ["m"]}):
        text_spread, null_spread = explanatory._shared_spreads()
        declared = pm.draw([text_spread, null_spread], draws=8000, random_seed=20261131)
    for column, prior in enumerate(declared):
        # A true match fails with probability 0.001. Measured with these seeds: a text scale of
        # 1.1 gives p 3e-7 on both columns, a signed text sd 0, no null ratio 2e-10.
        assert stats.ks_2samp(drawn[:, column], prior.ravel()).pvalue > 0.001, column


def test_prior_others_plants_the_gap_among_groups_drawn_from_the_level_prior(script):
    """--prior-others keeps the planted gap and draws the other groups as the fit's level prior
    (ZeroSumNormal) says, to tell over-coverage among groups otherwise alike from the rest.
    Fails when the gap is not exactly the planted one, when the race effects stop summing to
    zero (one level moved alone), or when the other levels or the planted pair's mean drift from
    the prior (drawn at a tenth off its scale, or the pair centred at zero)."""
    bench = script("bench_calibration")  # loads the script: once
    prior_others, (attribute, level_a, level_b) = bench.prior_others, bench.PLANTED
    rng = np.random.default_rng(20261201)
    draws = [prior_others(0.7, rng) for _ in range(20000)]
    race = np.array([[effects[attribute][level] for level in DEFAULT_RACES] for effects in draws])
    gender = np.array([effects["gender"][DEFAULT_GENDERS[0]] for effects in draws])
    index_a, index_b = DEFAULT_RACES.index(level_a), DEFAULT_RACES.index(level_b)
    others = [index for index in range(len(DEFAULT_RACES)) if index not in (index_a, index_b)]
    np.testing.assert_allclose(race[:, index_a] - race[:, index_b], 0.7, atol=1e-12)
    np.testing.assert_allclose(race.sum(axis=1), 0.0, atol=1e-12)

    def declared(levels: int, seed: int) -> np.ndarray:
        return pm.draw(pm.ZeroSumNormal.dist(sigma=explanatory.ATTRIBUTE_PRIOR_SD, shape=levels),
                       draws=20000, random_seed=seed)
    races = declared(len(DEFAULT_RACES), 20261202)
    genders = declared(len(DEFAULT_GENDERS), 20261203)
    # A true match fails one of the four with probability about 0.004. Measured with these
    # seeds: correct 0.36-0.76; the other levels at 1.1 times the prior's scale 3e-7 to 1e-6
    # (4,000 draws missed that); the pair centred at zero 1e-6, 4e-8 and 0 on the other races
    # and the pair's mean; one level moved alone breaks the sum.
    pair = [index_a, index_b]
    pairs = [(race[:, level], races[:, level]) for level in others] + [
        (gender, genders[:, 0]), (race[:, pair].mean(axis=1), races[:, pair].mean(axis=1))]
    for drawn, prior in pairs:
        assert stats.ks_2samp(drawn, prior).pvalue > 0.001


def test_the_planners_power_is_compared_with_the_audits_at_its_own_gap(script):
    """Plans at 1 and 3 logits against audits at 0.5, 1 and 3 logits with CI failure rates 0.9,
    0.0 and 0.4. Bugs caught: a plan compared with every audit at text sd 0.6 (the 3-logit
    plans would meet a pooled rate of 0.25), a half-width from the plans' simulations alone
    (pilots at 0.20 and 0.60 disagree more than 40 simulations' binomial error says), and a
    target that passes when one gap's difference exceeds its half-width, or when no gap was
    planned."""
    bench = script("bench_calibration")  # puts benchmarks/ on sys.path for calibration_plan
    calibration = script("calibration_plan")
    audits = pl.DataFrame({"gap": [0.5] * 10 + [1.0] * 60 + [3.0] * 60, "text_sd": [0.6] * 130,
                           "ci_fails": [1.0] * 9 + [0.0] + [0.0] * 60 + [1.0] * 24 + [0.0] * 36})
    powers = [{"gap": 3.0, "pilot": 0, "predicted": 0.20, "simulations": 20},
              {"gap": 3.0, "pilot": 1, "predicted": 0.60, "simulations": 20},
              {"gap": 1.0, "pilot": 0, "predicted": 0.0, "simulations": 20},
              {"gap": 1.0, "pilot": 1, "predicted": 0.05, "simulations": 20}]
    errors = calibration.plan_power_errors(powers, audits).sort("gap")
    assert errors["realised"].to_list() == [0.0, 0.4]
    assert errors["error"].to_list() == pytest.approx([0.025, 0.0])
    # The pilots disagree (sd 0.28 over 2): more than 40 simulations' binomial error (0.077).
    assert errors["half_width"][1] == pytest.approx(
        1.959964 * math.hypot(0.2, math.sqrt(0.24 / 60)), rel=1e-6)
    grid = pl.DataFrame({"covered": [1.0], "gap": [0.0], "false_fail": [0.0]})
    figures, targets = bench.result_figures(grid, audits, 3.0, 0.1, errors)
    verdict = [line for line in bench.target_lines(figures, targets)
               if line.startswith("target plan_power_error")]
    assert figures["plan_power_error"] == pytest.approx(0.025)
    assert verdict[0].endswith("PASS")
    off = errors.with_columns(error=pl.when(pl.col("gap") == 1.0).then(0.5)
                              .otherwise(pl.col("error")))
    figures, targets = bench.result_figures(grid, audits, 3.0, 0.1, off)
    assert bench.target_lines(figures, targets)[-1].endswith("FAIL")
    figures, targets = bench.result_figures(grid, audits, 3.0, 0.1, pl.DataFrame())
    assert bench.target_lines(figures, targets)[-1].endswith("FAIL")
