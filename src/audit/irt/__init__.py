"""Item response theory: outcome coding, Rasch models, their fit and its diagnostics."""

from audit.irt.diagnostics import Diagnostics, diagnose
from audit.irt.outcome import OUTCOME_CODINGS, code_outcomes
from audit.irt.rasch import (
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
