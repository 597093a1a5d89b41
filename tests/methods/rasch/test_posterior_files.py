"""posterior.nc files: written and read with ArviZ 1 (DataTree), and a file written by release
0.1.0 (ArviZ 0.23 InferenceData, tests/fixtures/release_0_1) still opens and means the same."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from audit.methods.rasch.analyse import read_posterior
from audit.methods.rasch.irt import summarise

FIXTURES = Path(__file__).parents[2] / "fixtures" / "release_0_1"


def test_a_posterior_written_by_release_0_1_opens_and_summarises_as_it_did() -> None:
    """Fails if the old file's groups, dims or coordinates are read differently, or if today's
    summary (ArviZ 1's mean, sd, HDI, R-hat and ESS) disagrees with the summary that release wrote
    from the same draws: the columns keep their meaning across the upgrade."""
    posterior = read_posterior(FIXTURES / "posterior.nc")
    assert {"posterior", "sample_stats"} <= set(posterior.children)
    theta = posterior.posterior["theta"]
    assert theta.sizes == {"chain": 2, "draw": 200, "respondent": 6}
    assert [str(name) for name in theta["respondent"].values] == [f"p{i}" for i in range(6)]
    today = summarise(posterior, hdi_prob=0.94)
    then = pl.read_csv(FIXTURES / "summary.csv")
    assert today["parameter"].to_list() == then["parameter"].to_list()
    for column in ("mean", "sd", "hdi_low", "hdi_high"):
        np.testing.assert_allclose(today[column].to_numpy(), then[column].to_numpy(),
                                   rtol=0, atol=1e-9, err_msg=column)
    for column in ("r_hat", "ess_bulk", "ess_tail"):
        np.testing.assert_allclose(today[column].to_numpy(), then[column].to_numpy(),
                                   rtol=1e-6, err_msg=column)


def test_a_posterior_round_trips_through_netcdf(tmp_path: Path) -> None:
    """What write_fit writes (DataTree.to_netcdf) read_posterior reads back, draws unchanged."""
    posterior = read_posterior(FIXTURES / "posterior.nc")
    path = tmp_path / "posterior.nc"
    posterior.to_netcdf(path)
    again = read_posterior(path)
    np.testing.assert_array_equal(again.posterior["b"].values, posterior.posterior["b"].values)
    path.unlink()  # read_posterior loaded it into memory: the file is not held open


def test_a_fit_folder_without_its_posterior_says_to_run_the_fit_stage(tmp_path: Path) -> None:
    """Bug caught: a missing posterior.nc was reported as a posterior that cannot be read
    ("No such file or directory"), not as a fit stage that has not run."""
    import pytest

    from audit.errors import AuditError
    from audit.methods.rasch.analyse import read_fit
    from audit.methods.rasch.config import FitConfig

    with pytest.raises(AuditError, match=r"^posterior not found at .*posterior.nc: run the fit "
                                         r"stage first$"):
        read_fit(tmp_path, FitConfig())
