"""nutpie callbacks cached on disk (irt/compiled.py): the same sampler as nutpie's own, loaded
instead of compiled in a second process. Real numba compilation and nutpie sampling (slow)."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import nutpie
import pymc as pm
import pytensor
import pytest

from audit.methods.rasch.irt import compiled as compiled_module
from audit.methods.rasch.irt.compiled import (
    NONFINITE_GRADIENT,
    WRONG_DIMENSION,
    CachedPyMCModel,
    callback_cache_key,
    compile_model,
)

pytestmark = pytest.mark.slow

SAMPLING = {"draws": 60, "tune": 60, "chains": 2, "cores": 1, "seed": 7, "progress_bar": False}


def regression_model(n: int = 40, seed: int = 0) -> pm.Model:
    """Data of three dtypes and two ranks, so a wrong offset, shape or dtype in the pointer
    table reads the wrong numbers; a zero-sum effect, so the sampled and stored sizes differ."""
    rng = np.random.default_rng(seed)
    with pm.Model(coords={"level": ["a", "b", "c"]}) as model:
        x = pm.Data("x", rng.normal(size=(n, 2)))
        group = pm.Data("group", rng.integers(0, 3, n).astype(np.int32))
        y = pm.Data("y", rng.normal(size=n))
        beta = pm.Normal("beta", 0.0, 1.0, shape=2)
        effect = pm.ZeroSumNormal("effect", 1.0, dims="level")
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.Normal("y_obs", (x * beta).sum(axis=1) + effect[group], sigma, observed=y)
    return model


def _logp(compiled, x: np.ndarray, n_dim: int | None = None) -> tuple[int, float, np.ndarray]:
    """Call a compiled model's C log-density callback as nuts-rs does."""
    gradient, logp = np.zeros(compiled.n_dim), np.zeros(1)
    doubles = ctypes.POINTER(ctypes.c_double)
    code = compiled.compiled_logp_func.ctypes(
        compiled.n_dim if n_dim is None else n_dim, x.ctypes.data_as(doubles),
        gradient.ctypes.data_as(doubles), logp.ctypes.data_as(doubles),
        compiled.user_data.ctypes.data_as(ctypes.c_void_p))
    return code, float(logp[0]), gradient


def _draws(compiled) -> dict[str, np.ndarray]:
    posterior = nutpie.sample(compiled, **SAMPLING).posterior
    return {name: posterior[name].values for name in ("beta", "effect", "sigma")}


def test_callbacks_and_draws_are_nutpies_own() -> None:
    model = regression_model()
    cached, reference = compile_model(model), nutpie.compile_pymc_model(model)
    assert isinstance(cached, CachedPyMCModel)
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = rng.normal(size=reference.n_dim)
        code, logp, gradient = _logp(cached, x)
        expected_code, expected_logp, expected_gradient = _logp(reference, x)
        assert code == expected_code == 0
        assert logp == pytest.approx(expected_logp, rel=1e-12)
        np.testing.assert_allclose(gradient, expected_gradient, rtol=1e-12)
    drawn, expected = _draws(cached), _draws(reference)
    for name in expected:
        np.testing.assert_array_equal(drawn[name], expected[name])


def test_callback_reports_a_wrong_dimension_and_a_non_finite_gradient() -> None:
    compiled = compile_model(regression_model())
    assert _logp(compiled, np.zeros(compiled.n_dim), n_dim=compiled.n_dim - 1)[0] == WRONG_DIMENSION
    assert _logp(compiled, np.full(compiled.n_dim, np.nan))[0] == NONFINITE_GRADIENT


def test_with_data_samples_as_a_model_compiled_with_that_data() -> None:
    """New data of another length through the pointer table equal a fresh compile with them."""
    compiled = compile_model(regression_model(n=40))
    other = regression_model(n=25, seed=5)
    data = {name: other[name].get_value() for name in ("x", "group", "y")}
    drawn, expected = _draws(compiled.with_data(**data)), _draws(compile_model(other))
    for name in expected:
        np.testing.assert_array_equal(drawn[name], expected[name])
    with pytest.raises(KeyError, match="unknown data variable 'z'"):
        compiled.with_data(z=np.zeros(3))
    with pytest.raises(ValueError, match="must have rank 2"):
        compiled.with_data(x=np.zeros(3))


def test_falls_back_to_nutpie_when_pytensor_does_not_cache() -> None:
    with pytensor.config.change_flags(numba__cache=False):
        compiled = compile_model(regression_model())
    assert not isinstance(compiled, CachedPyMCModel)
    assert _logp(compiled, np.zeros(compiled.n_dim))[0] == 0


CHILD = textwrap.dedent("""
    import json
    import numpy as np
    import polars as pl
    from audit.methods.rasch.irt import build_rasch_model, index_design
    from audit.methods.rasch.irt.compiled import compile_model
    rng = np.random.default_rng(0)
    outcomes = pl.DataFrame({"respondent": [f"r{i % 6}" for i in range(120)],
                             "item": [f"i{i % 5}" for i in range(120)],
                             "y": rng.integers(0, 2, 120)})
    compiled = compile_model(build_rasch_model(index_design(outcomes), "rasch"))
    print(json.dumps([type(compiled).__name__, compiled.compiled_logp_func.cache_hits,
                      compiled.compiled_expand_func.cache_hits]))
""")


def test_a_second_process_loads_the_rasch_callbacks_instead_of_compiling_them(tmp_path) -> None:
    """Fails if the cache key changes between processes (an id, a closure, a random name).

    The project's Rasch model, because PyTensor's own key of a graph is stable across processes
    for it but not for every model: a Normal likelihood with a learned sigma, as in
    regression_model, got a different key in 3 of 4 fresh processes (a miss, never a wrong hit).
    """
    environment = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path}"}

    def cache_hits() -> list:
        child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                               env=environment, check=True)
        return json.loads(child.stdout.strip().splitlines()[-1])

    assert cache_hits() == ["CachedPyMCModel", 0, 0]
    assert cache_hits() == ["CachedPyMCModel", 1, 1]


def test_an_edit_to_the_callback_module_changes_the_callbacks_cache_key(monkeypatch) -> None:
    """Fails if the key forgets this module's code (as the hand-bumped CALLBACK_VERSION did): an
    edited signature or environment would then load the old callbacks from ~/.pytensor."""
    key = callback_cache_key("graph", "def f(): pass")
    assert key != callback_cache_key("other graph", "def f(): pass")
    assert key != callback_cache_key("graph", "def g(): pass")
    edited = compiled_module.CALLBACK_MODULE_SOURCE.replace(b"numba.types.int64(",
                                                            b"numba.types.int32(")
    assert edited != compiled_module.CALLBACK_MODULE_SOURCE
    monkeypatch.setattr(compiled_module, "CALLBACK_MODULE_SOURCE", edited)
    assert callback_cache_key("graph", "def f(): pass") != key


JOINT_CHILD = textwrap.dedent("""
    import hashlib, sys
    import numpy as np
    sys.path[:0] = [sys.argv[1]]
    from test_comparison import FAST_FIT, gender_pair
    from audit.methods.rasch import comparison
    outcomes = gender_pair(np.random.default_rng(6), 0.5, prompt_sd=1.0, items=8, texts=2,
                           replicates=2)
    posterior = comparison.fit_joint(outcomes, FAST_FIT, paired=True)[0]["posterior"]
    digest = hashlib.sha256()
    for name in sorted(posterior.data_vars):
        digest.update(np.ascontiguousarray(posterior[name].values).tobytes())
    print(digest.hexdigest())
""")


def test_a_joint_fit_draws_the_same_on_a_cold_compile_cache_as_on_a_warm_one(tmp_path) -> None:
    """Bug caught (review probe, 2026-12-07): `python -m audit.compare` gave other draws on a
    fresh cache than on a filled one (gender change +0.00 [-4.87, +5.22] cold, -0.01 [-5.22,
    +4.98] warm), so a new CI runner and a developer's machine disagreed on the same runs. Under
    numba's fast-math the code that ran depended on what the process had compiled and what it
    had loaded; this two-side fit, the comparison's graph, drew differently on this seed (two
    hashes) until compile_nutpie turned fast-math off."""
    environment = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path}"}
    tests = os.path.join(os.path.dirname(os.path.dirname(__file__)))

    def draws_digest() -> str:
        child = subprocess.run([sys.executable, "-c", JOINT_CHILD, tests], capture_output=True,
                               text=True, env=environment, check=True, timeout=600)
        return child.stdout.strip().splitlines()[-1]

    assert draws_digest() == draws_digest()
