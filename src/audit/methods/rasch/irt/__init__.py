"""Item response theory: outcome coding, Rasch models, their fit and its diagnostics."""

import warnings

# PyTensor warns at import that pip installs cannot link BLAS. The warning does not apply here:
# nutpie compiles the model with numba, so PyTensor's C BLAS path never runs, and a scary
# three-line warning in every audit would teach users to ignore warnings.
warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS", category=UserWarning)

from pathlib import Path

import pytensor

# PyTensor writes the Python source of every function it compiles to numba into a new file in
# the system temporary folder and never removes it, unless ``generated_src_dir`` is set
# (PyTensor's config docs). Left unset, one fast test-suite run left about 400 such files in
# /tmp, and one session's benchmarks about 5,000. Set, the files are content-addressed (a recompile
# reuses its file) in one folder beside PyTensor's compile cache, which PyTensor prunes of files
# unused for weeks. A user's own setting (PYTENSOR_FLAGS=generated_src_dir=...) wins.
if not pytensor.config.generated_src_dir:
    pytensor.config.generated_src_dir = str(Path(pytensor.config.compiledir) / "generated_src")

from audit.methods.rasch.irt.diagnostics import Diagnostics, diagnose
from audit.methods.rasch.irt.outcome import OUTCOME_CODINGS, code_outcomes
from audit.methods.rasch.irt.rasch import (
    MODELS,
    RaschData,
    RaschFit,
    build_rasch_model,
    fit_rasch,
    index_design,
    parameter_table,
    respondent_ranking,
    summarise,
)

__all__ = [
    "MODELS", "OUTCOME_CODINGS", "Diagnostics", "RaschData", "RaschFit", "build_rasch_model",
    "code_outcomes", "diagnose", "fit_rasch", "index_design", "parameter_table",
    "respondent_ranking", "summarise",
]
