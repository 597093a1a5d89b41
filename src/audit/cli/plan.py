"""`python -m audit.plan`: how many replicates (and personas) a gap of a given size needs.

Composed with Hydra from the same config groups as `python -m audit`, so `python -m audit.plan
items=full personas=names plan.gap=10 plan.gap_unit=pp` plans exactly the design that
`python -m audit items=full personas=names` would send. For each number of replicates in
``plan.replicates`` (and persona multiple in ``plan.persona_multiples``) it prints (print_plan)
the expected HDI width of each attribute's contrasts, the power of the CI verdict at the planted
gap and its false-fail rate (audit.methods.rasch.power), simulated from a past run's variance
components (``plan.from_run``) or the plan.* figures, and the minutes the preflight estimates
for the prompts the response store does not hold yet (empty until it holds some answers of each
model to time); plan.csv adds the requests still to send and the prompt and completion
tokens. With design.adaptive=true each simulated audit asks in rounds and stops
as the audit would, and ``prompts_asked`` is what it is expected to spend; a time budget
(design.max_answer_minutes) is spent at the store's median latency a prompt, and is not simulated
until the store holds some of this model's answers. Nothing is sent to any model. Writes
``plan.csv`` in paths.output_dir.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path

import polars as pl
from rich import box
from rich.console import Console
from rich.progress import TaskID
from rich.table import Table

from audit.cli.runs import run_source
from audit.config import TrackingConfig
from audit.methods.configs import AuditConfig, register_configs
from audit.llm.engine import concurrency_limits, plan_requests
from audit.logs import progress_bar, quieted, said_once
from audit.methods.rasch.pilot import run_components
from audit.methods.rasch.power import check_plannable, config_components, simulate_power
from audit.methods.rasch.simulation import VarianceComponents
from audit.llm.preflight import Planned, estimate, seconds_to_answer
from audit.errors import AuditError
from audit.methods.rasch.adaptive import design_rule
from audit.methods.rasch.adaptive_run import pool_tokens
from audit.design import ADAPTIVE_METHOD, check_adaptive_settings
from audit.methods.rasch.design import backends_for, design_stage
from audit.llm.store import ResponseStore, store_problem
from audit.tables import write_frame
from audit.outputs import check_output
from audit.methods.checks import percent, signed
from audit.methods.rasch.irt import balance
from audit.methods.rasch.irt.contrasts import POOLED_MODEL

log = logging.getLogger("audit.plan")
# The loggers of one simulated audit's fit and looks.
SIMULATION_LOGGERS = ("audit.methods.rasch.irt", "audit.methods.rasch.adaptive.looks")
STORE_OPTION = "tracking.tracking_uri=URI"  # how this command takes the store, for the hints
COST_COLUMNS = ("prompts", "to_send", "prompt_tokens", "max_completion_tokens", "minutes")
PRICED = ("prompt_tokens", "max_completion_tokens", "minutes")  # what an adaptive plan rescales
register_configs()


def planned_requests(cfg: AuditConfig, prompts: pl.DataFrame
                     ) -> tuple[list[Planned], dict[str, int]]:
    """The prompts as the engine would send them, and each model's concurrency."""
    backends = backends_for(cfg, prompts)
    return plan_requests(prompts, backends, cfg.model), concurrency_limits(backends, cfg.model)


def design_cost(cfg: AuditConfig, replicates: int, store: ResponseStore) -> dict[str, float]:
    """The preflight estimate of the composed design with this many replicates."""
    prompts = design_stage(dataclasses.replace(
        cfg, design=dataclasses.replace(cfg.design, replicates=replicates)))
    planned, concurrency = planned_requests(cfg, prompts)
    figures = estimate(planned, store, concurrency)
    return {"prompts": figures["prompts"], "to_send": figures["to_send"],
            "prompt_tokens": figures["prompt_tokens"],
            "max_completion_tokens": figures["max_completion_tokens"],
            "minutes": figures["seconds"] / 60.0}


def scaled_cost(cost: dict[str, float], prompts: pl.DataFrame, attribute: str,
                multiple: int) -> dict[str, float]:
    """Cost with every persona of the attribute's levels repeated ``multiple`` times.

    Those personas do not exist yet, so their extra prompts are all still to send; each costs the
    design's average prompt (tokens and time scale with the number of prompts)."""
    share = prompts.get_column(attribute).is_not_null().mean() or 0.0
    extra = (multiple - 1) * share * cost["prompts"]
    per_prompt = {key: (cost[key] / cost["to_send"] if cost["to_send"] else math.nan)
                  for key in ("prompt_tokens", "max_completion_tokens", "minutes")}
    scaled = dict(cost)
    scaled["prompts"] = cost["prompts"] + extra
    scaled["to_send"] = cost["to_send"] + extra
    for key, value in per_prompt.items():
        if extra:
            scaled[key] = cost[key] + extra * value
    return scaled


def adaptive_costs(table: pl.DataFrame, cfg: AuditConfig, tokens_per_prompt: float
                   ) -> pl.DataFrame:
    """An adaptive plan's price: the whole design's cost columns rescaled to the prompts the
    run may ask at most (``budget_prompts``: design.max_prompts or what design.max_tokens_budget
    buys, at most the design; ``budget_*``) and to those it is expected to ask (``asked_*``, at
    ``prompts_asked``), each prompt at the design's average; a time budget caps
    ``budget_minutes``. The fixed design's columns alone priced prompts the budget never asks
    (252 prompts and 40.8 minutes for a budget of 150)."""
    budgets = {size: design_rule(cfg.design, cfg.fit.familywise_alpha, size,
                                 tokens_per_prompt).max_prompts
               for size in table.get_column("prompts").round().cast(pl.Int64).unique()}
    table = table.with_columns(
        budget_prompts=pl.col("prompts").round().cast(pl.Int64).replace_strict(budgets))
    budget_share = pl.col("budget_prompts") / pl.col("prompts")
    asked_share = pl.col("prompts_asked") / pl.col("prompts")
    table = table.with_columns(
        *[(pl.col(column) * budget_share).alias(f"budget_{column}") for column in PRICED],
        *[(pl.col(column) * asked_share).alias(f"asked_{column}") for column in PRICED])
    if cfg.design.max_answer_minutes is not None:
        table = table.with_columns(budget_minutes=pl.min_horizontal(
            "budget_minutes", pl.lit(float(cfg.design.max_answer_minutes))))
    return table


def seconds_per_prompt(cfg: AuditConfig, prompts: pl.DataFrame, store: ResponseStore) -> float:
    """The design's answering time a prompt, as the preflight times a run (from each model's
    answers in the store, preflight.answering_forecast); NaN until the store holds some."""
    planned, concurrency = planned_requests(cfg, prompts)
    return seconds_to_answer(planned, store, concurrency) / len(planned)


def resolved_source(source: str, settings: TrackingConfig) -> str:
    """plan.from_run as pilot.run_files reads it: a run directory as given, else the full id of
    the run it names in the store, found as audit.runs and audit.compare find it."""
    return str(run_source(source, settings, STORE_OPTION, f"plan.from_run={source}"))


def planning_components(cfg: AuditConfig) -> VarianceComponents | tuple[VarianceComponents, ...]:
    """What the simulations are drawn from: a past run's measured components at one of its
    posterior draws per simulation (plan.from_run), else the plan.* figures."""
    defaults = config_components(cfg.plan)
    if cfg.plan.from_run is None:
        return defaults
    return run_components(resolved_source(str(cfg.plan.from_run), cfg.tracking),
                          cfg.tracking.tracking_uri,
                          tuple(cfg.fit.attributes), cfg.fit.outcome, defaults,
                          count=cfg.plan.simulations, seed=cfg.plan.seed,
                          drop_labels=tuple(cfg.fit.drop_labels))


def plan_table(cfg: AuditConfig, store: ResponseStore) -> pl.DataFrame:
    """Power and cost of every planned design size, one row per model, size and attribute."""
    prompts = design_stage(cfg)
    check_plannable(prompts, cfg.plan, cfg.fit)
    if cfg.design.replicates not in cfg.plan.replicates:
        # The plan's options replace the design's replicates: said, since `python -m audit`
        # with the same overrides would ask design.replicates.
        log.warning("plan: design.replicates=%d is not among plan.replicates=%s, which the "
                    "plan sizes instead; add it there to see the design the audit would ask",
                    cfg.design.replicates, list(cfg.plan.replicates))
    components = planning_components(cfg)
    # Each simulated audit is a fit (a fit a look, adaptive): their own INFO lines would bury the
    # plan's, so a bar per design option counts them instead (AUDIT_VERBOSE=1 shows every line).
    # The design's warnings (aliased attributes) come from every simulated fit: said once.
    with quieted(*SIMULATION_LOGGERS), said_once(balance.__name__), \
            progress_bar(errors=False) as bar:
        tasks: dict[str, TaskID] = {}

        def on_simulation(option: str, done: int, most: int) -> None:
            if option not in tasks:
                tasks[option] = bar.add_task(f"simulated audits, {option}", total=most)
            bar.update(tasks[option], completed=done, total=most)

        # simulate_power decides whether the design has a time budget to spend it on.
        tokens = pool_tokens(cfg, prompts)
        power = simulate_power(prompts, cfg.plan, cfg.fit, components,
                               design=cfg.design, tokens_per_prompt=tokens,
                               seconds_per_prompt=seconds_per_prompt(cfg, prompts, store),
                               on_simulation=on_simulation)
    costs = []
    for replicates in cfg.plan.replicates:
        cost = design_cost(cfg, replicates, store)
        for multiple in cfg.plan.persona_multiples:
            costs.append({"replicates": replicates, "persona_multiple": multiple,
                          **scaled_cost(cost, prompts, cfg.plan.attribute, multiple)})
    table = power.join(pl.DataFrame(costs), on=["persona_multiple", "replicates"], how="left")
    if cfg.design.adaptive:
        table = adaptive_costs(table, cfg, tokens)
    # A size whose prompts are all in the store has no price per prompt to scale: null, not 0.
    counts = [column for column in table.columns if column.endswith(COST_COLUMNS[:-1])]
    return table.with_columns(pl.col(*counts).round().cast(pl.Int64, strict=False))


def run_plan(cfg: AuditConfig, output_dir: Path) -> pl.DataFrame:
    # A plan simulates a Rasch audit: method=iat printed a Rasch plan as if it were the IAT's.
    if cfg.method != ADAPTIVE_METHOD:
        raise AuditError(f"audit.plan sizes Rasch audits only; method={cfg.method} has no "
                         "planner: drop method=")
    # A budget without design.adaptive would be ignored here as in the run.
    check_adaptive_settings(ADAPTIVE_METHOD, cfg.design,
                            ignored="this plan would simulate the whole design")
    # Both checked before simulating: a file as paths.output_dir, or a store that is no
    # database, were tracebacks once the minutes of simulation were spent (bad-input review
    # 2026-12-06).
    check_output(output_dir, "paths.output_dir=", folder=True)
    store_path = Path(cfg.paths.response_store)
    problem = store_problem(store_path)
    if problem or store_path.is_dir():
        raise AuditError(f"paths.response_store={store_path} "
                         f"{problem or 'is a folder'}, not a response store: name the store of "
                         "earlier runs, or leave the default (.audit/responses.sqlite3)")
    # Planning reads earlier latencies but must not create a store in a fresh project, nor write
    # its tables into an empty file.
    has_answers = store_path.is_file() and store_path.stat().st_size > 0
    with ResponseStore(store_path if has_answers else ":memory:") as store:
        table = plan_table(cfg, store)
    output_dir.mkdir(parents=True, exist_ok=True)
    write_frame(table, output_dir / "plan.csv")
    log.info("plan: wrote %s", output_dir / "plan.csv")
    return table


def _plus_minus(value, error, digits: str = ".2f") -> str:
    if value is None or not math.isfinite(value):
        return ""
    text = format(value, digits)
    return text if error is None or not math.isfinite(error) else f"{text} ± {error:{digits}}"


def print_plan(table: pl.DataFrame, csv_path: Path, hdi_prob: float, adaptive: bool,
               console: Console | None = None, pp: float | None = None) -> None:
    """The plan as a reader compares its options, in 80 columns: a table per audited model, a
    row per design option and attribute, rounded, the power with its Monte Carlo half-width;
    every column of ``table`` is in ``csv_path``. (polars' own print of the 19 columns cut every
    header to eight letters and wrapped each row over two lines at 200 characters.)"""
    console = console or Console()
    planted = table.filter(pl.col("gap_logit").is_not_null())
    models = sorted(table.get_column("model_name").unique().to_list())
    several_multiples = table.get_column("persona_multiple").n_unique() > 1
    simulations = table.get_column("simulations")
    counts = (f"{simulations.min()}" if simulations.min() == simulations.max()
              else f"{simulations.min()}-{simulations.max()}")
    gap = "no planted gap"
    if planted.height:
        logits = signed(planted["gap_logit"][0]).removeprefix("+")
        size = (f"{logits} {'logit' if logits in ('1.00', '-1.00') else 'logits'}" if not pp
                else f"{pp:g} pp ({logits} logits)")
        named = planted.get_column("level_a", default=None)
        pair = ("" if named is None or named[0] is None else
                f", {named[0]} - {planted['level_b'][0]}")
        gap = f"{planted['attribute'][0]} gap of {size}{pair} planted"
    columns = [*(["texts"] if several_multiples else []), "replicates", "prompts",
               *(["asked"] if adaptive else []), "attribute", "width", "power", "false",
               "minutes"]
    # An adaptive audit's minutes are those of the prompts it is expected to ask.
    minutes = "asked_minutes" if adaptive else "minutes"
    for model in models:
        who = f"{model}: " if len(models) > 1 else "Plan: "
        # The title on a line of its own: as the table's title it wrapped at the table's width,
        # narrower than the screen ("... an" / "option"). Too long for the screen (a range of
        # simulation counts, long level names), it breaks after the gap, not mid-phrase.
        title = f"{who}{gap}, {counts} simulations an option"
        if len(title) > console.width:
            title = f"{who}{gap},\n{counts} simulations an option"
        console.print(title, highlight=False, markup=False)
        grid = Table(box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False,
                     show_edge=False)
        for column in columns:  # numbers never wrap: 80 columns hold them all
            grid.add_column(column, justify="left" if column == "attribute" else "right",
                            no_wrap=True)
        rows = table.filter(pl.col("model_name") == model).sort(
            "persona_multiple", "replicates", "attribute")
        for row in rows.iter_rows(named=True):
            grid.add_row(*[*([str(row["persona_multiple"])] if several_multiples else []),
                           str(row["replicates"]),
                           "" if row.get("prompts") is None else str(row["prompts"]),
                           *([f"{row['prompts_asked']:.0f}"] if adaptive else []),
                           row["attribute"], _plus_minus(row["hdi_width"], None),
                           _plus_minus(row["p_ci_fails"], row["p_ci_fails_hw"]),
                           _plus_minus(row["p_false_fail"], None),
                           _plus_minus(row.get(minutes), None, ".1f")])
        console.print(grid)
    texts = ("texts: each persona with a level of the planted attribute that many times (more "
             "texts a cell). " if several_multiples else "")
    asked = ("asked: the prompts an adaptive audit is expected to ask before it stops. "
             if adaptive else "")
    # 80 columns hold no more: the budget's size and price are in plan.csv.
    spent = ("minutes: answering the prompts it is expected to ask that are not yet in the "
             "response store (plan.csv: asked_minutes and asked_* tokens; at most "
             "budget_prompts, priced as budget_minutes and budget_* tokens; minutes and the "
             "other cost columns: the whole fixed design), "
             if adaptive else "minutes: answering the prompts not yet in the response store, ")
    audited = [model for model in models if model != POOLED_MODEL]
    together = (f"prompts, {'asked and ' if adaptive else ''}minutes count the whole design, "
                f"all {len(audited)} models together. " if len(audited) > 1 else "")
    console.print(
        f"{texts}{asked}width: the expected {percent(hdi_prob)} HDI width of the attribute's "
        "contrasts. power: how often python -m audit.verdict fails on the planted gap with its "
        "sign (± its 95% Monte Carlo half-width); false: how often it fails on one of the "
        "attribute's contrasts without a gap. "
        f"{spent}at each model's median "
        f"latency there (empty while a model has no answers to time). {together}Every column, "
        f"with its Monte Carlo errors: {csv_path}", highlight=False, markup=False)
