"""The project's `rasch` model in NumPyro, for benchmarks/bench_fit.py's like-with-like comparison.

Its own module so that only the comparison imports JAX: the --scale children of bench_fit.py
report peak memory, which importing JAX alone would raise. Needs the `bench` extra.
"""

from __future__ import annotations

import os

# Two CPU devices for JAX, set before jax is imported (the machine has two cores).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402

from audit.methods.rasch.config import FitConfig  # noqa: E402
from audit.methods.rasch.irt.indexing import RaschData  # noqa: E402
from audit.methods.rasch.irt.rasch import ITEM_PRIOR_SD, THETA_PRIOR_SD  # noqa: E402


def rasch(respondent_idx, item_idx, trials, successes, n_respondents: int, n_items: int) -> None:
    """Zero-sum theta (sd THETA_PRIOR_SD), b ~ N(0, ITEM_PRIOR_SD), Binomial cells: as in PyMC."""
    theta = numpyro.sample("theta", dist.ZeroSumNormal(THETA_PRIOR_SD, (n_respondents,)))
    b = numpyro.sample("b", dist.Normal(0.0, ITEM_PRIOR_SD).expand((n_items,)).to_event(1))
    numpyro.sample("y", dist.Binomial(total_count=trials,
                                      logits=theta[respondent_idx] - b[item_idx]),
                   obs=successes)


def use_compilation_cache(directory: str) -> None:
    """JAX's persistent compilation cache, every compiled program kept: NumPyro's counterpart of
    the default's cached nutpie callbacks. Process-wide once set, so bench_fit.py sets it only in
    child processes."""
    jax.config.update("jax_compilation_cache_dir", directory)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def sample_rasch(data: RaschData, config: FitConfig) -> tuple[np.ndarray, np.ndarray]:
    """theta and b draws as (chain, draw, k) arrays; the chains run vectorised on the CPU."""
    mcmc = MCMC(NUTS(rasch, target_accept_prob=config.target_accept), num_warmup=config.tune,
                num_samples=config.draws, num_chains=config.chains, chain_method="vectorized",
                progress_bar=False)
    mcmc.run(jax.random.PRNGKey(config.seed), jnp.asarray(data.cell_respondent),
             jnp.asarray(data.cell_item), jnp.asarray(data.trials), jnp.asarray(data.successes),
             len(data.respondents), len(data.items))
    samples = mcmc.get_samples(group_by_chain=True)
    return np.asarray(samples["theta"]), np.asarray(samples["b"])
