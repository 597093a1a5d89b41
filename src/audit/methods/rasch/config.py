"""The Rasch method's config sections (`cfg.fit`: the IRT model and sampler, conf/fit/;
`cfg.plan`: power planning, `python -m audit.plan`) and its verdict rules.

The judge, items and personas sections stay shared in audit.config: `python -m audit.judge_eval`
and the DIF method read them too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from audit.config_ranges import each_within, not_blank, one_of, seed_setting, within

# The valid values of FitConfig's named choices; the fit code reads them from here (irt/rasch.py
# MODELS, irt/outcome.py OUTCOME_CODINGS, irt/probability.py RESPONSES, irt/engines.py ENGINES),
# so the config check and the fit agree on one list.
MODELS: tuple[str, ...] = ("rasch", "rasch_seed", "twopl", "explanatory", "population", "hurdle")
OUTCOMES: tuple[str, ...] = ("favourable", "undetermined")
RESPONSES: tuple[str, ...] = ("decision", "probability")
ENGINES: tuple[str, ...] = ("auto", "cached", "nutpie", "pymc")
GAP_UNITS: tuple[str, ...] = ("logit", "pp")  # plan.gap_unit (power.py)
# What analyse.write_fit writes in its folder (some only when the fit has them), so audit.fit can
# keep an input from being overwritten by them before it loads the sampler; a test keeps it in
# step with write_fit.
FIT_FILES = ("summary.csv", "posterior.nc", "item_gaps.csv", "contrasts.csv", "diagnostics.json")


@dataclass
class FitConfig:
    """The IRT model and the sampler. Thresholds default to Vehtari et al. (2021)."""

    name: str = "rasch"
    # rasch (identified, Binomial cells) | rasch_seed (original audit) | twopl | explanatory |
    # population (group contrasts: text spread within demographic cells; conf/fit/population.yaml)
    # | hurdle (decide or abstain, then favourable if decided; conf/fit/hurdle.yaml)
    model: str = one_of("rasch", MODELS)
    outcome: str = one_of("favourable", OUTCOMES)
    # What the fit reads of each answer: `decision` (the label, coded by fit.outcome) or
    # `probability` (the answer's P(favourable) from option log-probabilities, judge=logprob or
    # an imported column, as logit P with a Normal residual: irt/probability.py). Probability
    # works with fit.outcome=favourable and the rasch, twopl, explanatory and population models;
    # the judge-error correction does not apply to it.
    response: str = one_of("decision", RESPONSES)
    # Labels left out of the fit (of fit.outcome and fit.second_outcome alike), except the label
    # a coding counts as its event: dropping needs_more_information keeps the abstention fit's 1s.
    drop_labels: list[str] = field(default_factory=list)
    draws: int = within(1000, 1)
    tune: int = within(1000, 0)
    chains: int = within(4, 1)
    cores: int = within(2, 1)
    target_accept: float = within(0.8, 0, 1, open_low=True, open_high=True)
    seed: int = seed_setting(20251123)
    # The sampler (irt/engines.py): auto (nutpie on callbacks cached across processes when its
    # check of nutpie's internals passes, else public nutpie with one warning) | cached | nutpie
    # (the public nutpie.compile_pymc_model) | pymc (PyMC's own NUTS).
    engine: str = one_of("auto", ENGINES)
    hdi_prob: float = within(0.94, 0, 1, open_low=True, open_high=True)
    rhat_max: float = within(1.01, 1)
    ess_min: float = within(400.0, 0)
    # Persona columns whose levels are contrasted (and, for fit.model=explanatory, modelled).
    attributes: list[str] = field(default_factory=lambda: ["gender", "race"])
    # Attributes that also get a level x item interaction (population and explanatory models
    # only): which scenarios carry the gap.
    item_dif: list[str] = field(default_factory=list)
    # Half-width of the region of practical equivalence, in logits (default: Cohen's d = 0.1).
    # Negative, the decision rule would turn inside out (tight intervals at 0 called `different`).
    rope: float = within(0.1814, 0)
    # Family-wise error rate of the run's `different` decisions: each contrast is decided on its
    # HDI of mass 1 - familywise_alpha / K, K every contrast the CI verdict judges in the run
    # (every audited model, the pooled rows and every outcome; Bonferroni); null: each on its own
    # fit.hdi_prob HDI, with no multiplicity control.
    familywise_alpha: float | None = within(0.05, 0, 1, open_low=True, open_high=True)
    # A second outcome coding fitted next to fit.outcome, e.g. `undetermined` to measure who is
    # asked for more information; its contrasts carry outcome=<coding>.
    second_outcome: str | None = one_of(None, OUTCOMES)
    # Carry the judge's errors into the posterior: each label is the true decision passed through
    # the judge's misclassification rates, with Beta priors from its gold-set confusion counts
    # (irt/judge_error.py). None: on whenever the run has gold-set results (judge.evaluate_on_gold),
    # for every model but rasch_seed and hurdle (labels as truth); true: required (the fit fails
    # without gold results); false: off.
    judge_error: bool | None = None
    # The judge correction is a cut (irt/judge_cut.py): this many fits, each with the labelling
    # paths' rates fixed at one draw from their gold posteriors, pooled. More imputations track
    # the rate uncertainty more closely; each costs one more tuning of the compiled model, and
    # each draws its share of fit.draws (at least 2000, judge_cut.MIN_IMPUTATION_DRAWS).
    judge_imputations: int = field(default=4, metadata={"range": (1, 1000)})


@dataclass
class PlanConfig:
    """Power planning (`python -m audit.plan`): a planted gap, the design sizes to try, and the
    variance components to simulate, from a past run (from_run) or the figures below."""

    attribute: str = "race"
    levels: list[str] = field(default_factory=list)  # two levels; empty: the first two, sorted
    gap: float = 0.5  # the planted gap: level[0] minus level[1]
    gap_unit: str = one_of("logit", GAP_UNITS)  # pp: percentage points around base_rate
    # A past run (its directory, or an MLflow run id) whose posterior and gold results give the
    # variance components below (methods/rasch/pilot.py); null: use the figures below.
    from_run: str | None = None
    # Without from_run: the default run's posterior (issue 34: item sd 2.27, persona sd 0.92,
    # null sd 1.16) rounded, and the default judge's gold accuracy (about 0.95 on 57 answers).
    # The favourable rate of a null persona on the average item.
    base_rate: float = within(0.5, 0, 1, open_low=True, open_high=True)
    text_sd: float = within(0.6, 0)  # spread of persona texts within one demographic cell, logits
    null_sd: float = within(1.0, 0)  # spread of null (random-string) personas, logits
    item_sd: float = within(2.0, 0)  # spread of item difficulties, logits
    # The judge's P(favourable | truly favourable) and P(unfavourable | truly unfavourable);
    # above 0.5, as the simulation requires: a judge no better than a coin cannot be corrected
    # for (declared [0, 1], 0.3 passed here and was refused later by another range).
    sensitivity: float = within(0.95, 0.5, 1, open_low=True)
    specificity: float = within(0.95, 0.5, 1, open_low=True)
    # Gold answers per true class behind those rates; 0: labels as truth.
    gold_per_class: int = within(25, 0)
    replicates: list[int] = each_within([1, 2, 4], 1)
    persona_multiples: list[int] = each_within([1], 1)
    # Simulations per design option: until the power's 95% half-width is at most `precision`
    # (about 1,070 at a power near 0.5), at least min_simulations, at most simulations.
    precision: float = within(0.03, 0, open_low=True)
    min_simulations: int = within(50, 1)
    simulations: int = within(1100, 1)
    draws: int = within(300, 1)
    tune: int = within(300, 0)
    chains: int = within(2, 1)
    seed: int = seed_setting(20251123)


@dataclass
class IngestConfig:
    """Answers collected elsewhere (`python -m audit.ingest input=FILE`), audited by the same
    judge, fit, report and verdict as generated ones (methods/rasch/ingest/, docs/ingest.md).
    Unset `input`: the audit generates its answers."""

    input: str | None = None  # CSV, parquet, JSONL, or lm-evaluation-harness --log_samples JSONL
    format: str = "auto"  # auto (from the file) | csv | parquet | jsonl | lm_eval
    # A persona table (persona_id, kind, descriptor, gender, race) for a file that names its
    # personas by persona_id only.
    personas_file: str | None = None
    # The model's name for rows without a `model` column; None: the name of the file's folder
    # for lm-evaluation-harness samples (it writes them under the model's name), else "imported".
    # `ingest.model=` (empty) fell back to that default without a word.
    model: str | None = not_blank(None, "write ingest.model=NAME to name the rows' model, or "
                                  "leave it out: rows without a model are then named 'imported' "
                                  "(lm-evaluation-harness samples: their folder's name)")


@dataclass
class RaschVerdictRules:
    """`python -m audit.verdict` on a Rasch run: a contrast fails when its family-wise HDI lies
    outside the ROPE ("different"), and a fit when it did not converge
    (methods/rasch/verdict.py). Null personas rank a finding (null_percentile); they do not
    forgive it."""

    rasch_fail_on_undecided: bool = False
    rasch_require_converged: bool = True


SECTIONS: dict[str, type] = {"fit": FitConfig, "plan": PlanConfig, "ingest": IngestConfig}
VERDICT_RULES: type = RaschVerdictRules
# Shared verdict rules this method fixes when it fits, not when it is judged, and the setting that
# fixes each: a contrast is decided on a family-wise HDI of mass 1 - alpha / K, which needs the
# posterior draws, so `audit.verdict alpha=` cannot move it (it was ignored in silence).
RULES_SET_BY_FIT: dict[str, str] = {"alpha": "fit.familywise_alpha"}
# The metrics a run of this method is judged by (shell-style patterns): the columns its runs
# show in `python -m audit.runs`, a sweep's runs table and the MLflow runs view.
HEADLINE_METRICS: tuple[str, ...] = ("n_prompts", "rhat_max", "ess_bulk_min", "judge/kappa")


def respond_params(root) -> tuple[str, ...]:
    """An adaptive respond stage (design.adaptive) also judges and fits every round and stops by
    design.* (adaptive_run.py), so DVC reruns it when any of those settings change; a fixed one
    reads none of them."""
    return ("ingest", "design", "judge", "fit") if root.design.adaptive else ("ingest",)


# The settings of this method's own sections each DVC stage reads (dotted keys, or a function of
# the composed config giving them when that depends on the config); the stages of dvc.yaml list
# them as `dvc_params.STAGE` (audit.methods.configs), besides the shared sections.
# The score stage samples rule labels to re-read per level of fit.attributes (judge/rule_check.py),
# and the report compares them per level.
DVC_PARAMS: dict[str, tuple[str, ...] | Callable[..., tuple[str, ...]]] = {
    "design": ("ingest",), "respond": respond_params, "score": ("ingest", "fit.attributes"),
    "analyse": ("fit",),
    "report": ("fit.hdi_prob", "fit.rhat_max", "fit.ess_min", "fit.attributes",
               "fit.judge_imputations")}
