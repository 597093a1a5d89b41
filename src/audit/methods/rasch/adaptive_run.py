"""The respond stage of an adaptive Rasch audit (design.adaptive=true): rounds through the engine.

The design stage writes the whole fixed design (the pool). Here each round's prompts (chosen by
adaptive.py from the last fit) go through the same engine and response store as a fixed run's
(answer_prompts), are labelled by the same judge (judge_stage) and fitted by the same fit
(fit_rasch with the run's fit config, at the look's share of fit.familywise_alpha). Every answer
and every judge reading is in the store, and each look's fit is seeded by fit.seed: a killed run,
rerun, makes the same choices and is served from the store up to where it stopped.

The stage writes the answers to the prompts it asked (responses.parquet, as a fixed run's
respond stage does for all of them) and the trajectory (adaptive_rounds.csv: one row a look);
the score, analyse and report stages then run as for a fixed run, on the asked prompts, and the
analyse stage decides at the last look's alpha (look_alpha_of).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import polars as pl

from audit.llm.engine import concurrency_limits
from audit.llm.preflight import answering_seconds
from audit.llm.store import ResponseStore
from audit.llm.failures import check_failures
from audit.logs import counted, said_once
from audit.methods.configs import AuditConfig
from audit.methods.rasch.adaptive import (
    AdaptiveRun,
    check_contrastable,
    design_rule,
    run_adaptive,
    tokens_per_prompt,
)
from audit.methods.rasch.analyse import outcome_table
from audit.methods.rasch.design import backends_for, models_for
from audit.methods.rasch.irt import balance, code_outcomes
from audit.methods.rasch.irt.judge_error import resolve_confusion
from audit.methods.run import answer_prompts
from audit.methods.rasch.score import check_judge_failures, empty_gold, judge_stage, judge_tools
from audit.schemas import ResponseSchema
from audit.tables import read_frame, write_frame, write_table

log = logging.getLogger(__name__)

ROUNDS = "adaptive_rounds.csv"


def pool_tokens(cfg: AuditConfig, prompts: pl.DataFrame) -> float:
    """The design's estimated tokens a prompt, at each audited model's answer budget."""
    return tokens_per_prompt(prompts, {name: model.sampling.max_tokens
                                       for name, model in cfg.model.items()})


def respond_adaptively(cfg: AuditConfig, prompts: pl.DataFrame, responses_path: Path,
                       rounds_path: Path, on_round=None) -> AdaptiveRun:
    """The rounds (module docstring); writes the asked prompts' answers and the trajectory."""
    # The fit settings the looks would refuse after round 0 are refused by the design stage
    # (analyse.check_fit_settings), before any model or judge is loaded.
    with said_once(balance.__name__):
        return _respond_adaptively(cfg, prompts, responses_path, rounds_path, on_round)


def _respond_adaptively(cfg: AuditConfig, prompts: pl.DataFrame, responses_path: Path,
                        rounds_path: Path, on_round) -> AdaptiveRun:
    rule = design_rule(cfg.design, cfg.fit.familywise_alpha, prompts.height,
                       pool_tokens(cfg, prompts), prompts["respondent_id"].n_unique())
    check_contrastable(prompts, cfg.fit.attributes, cfg.fit.model)
    models = models_for(cfg, prompts)
    # Built once for every round; each round's labels feed its fit. The rule check and the other
    # judge votes are the score stage's, which labels the asked prompts again from the store.
    tools = judge_tools(cfg, prompts)
    answered: list[pl.DataFrame] = []
    gold = empty_gold()

    def answer(chosen: pl.DataFrame, round_index: int) -> pl.DataFrame:
        nonlocal gold
        asked = prompts.join(chosen.select("prompt_id"), on="prompt_id", how="semi")
        responses = answer_prompts(cfg, asked, models, f"Rasch round {round_index}")
        answered.append(responses)
        # Failures beyond the share stop the run at this round's look, before the next round is
        # bought: a look read without them would choose on a shrinking, non-random subset, and
        # a rerun, whose retries may succeed, would choose differently (every answer so far is
        # in the store). The share is of every request so far, as a fixed run counts it over
        # its whole design: per round, one failure in a last round of 10 stopped the run at 10%.
        check_failures(pl.concat(answered), cfg.engine.max_failed_share,
                       cfg.paths.response_store, f"Rasch requests (to round {round_index})")
        judged = judge_stage(cfg, asked, responses, with_gold=round_index == 0, tools=tools,
                             with_rule_check=False)
        check_judge_failures(cfg, judged)
        if round_index == 0:
            gold = judged.gold
        table = outcome_table(asked, judged.labels, cfg.fit.attributes)
        return code_outcomes(table, cfg.fit.outcome, cfg.fit.drop_labels)

    def confusion():
        # The gold set is labelled with round 0's answers, before the first fit reads its rates.
        return resolve_confusion(cfg.fit.judge_error, cfg.fit.model, cfg.fit.outcome,
                                 gold if gold.height else None, cfg.fit.drop_labels)

    concurrency = concurrency_limits(backends_for(cfg, prompts), models)

    def spent(_asked: pl.DataFrame) -> float:
        # design.max_answer_minutes counts recorded latencies, so a rerun from the store spends
        # the same time and stops at the same look (the answers are those of the rows asked).
        with ResponseStore(cfg.paths.response_store) as store:
            return answering_seconds(pl.concat(answered), prompts, concurrency, store)

    run = run_adaptive(prompts, answer, cfg.fit, rule, confusion=confusion, on_round=on_round,
                       answer_seconds=spent)
    write_frame(run.rounds, rounds_path)
    responses = pl.concat(answered)
    write_table(responses, responses_path, ResponseSchema, "responses")
    check_failures(responses, cfg.engine.max_failed_share, cfg.paths.response_store,
                   "Rasch requests")
    log.info("adaptive: %d of %d prompts asked (%.0f%%), stopped: %s", run.prompts,
             prompts.height, 100 * run.prompts / prompts.height, run.stop)
    return run


# Why a run stopped (STOPS in adaptive.py), in the words of the summary a run ends with and of
# the HTML report, which adds what each stop's user can do next.
STOP_READINGS = {
    "decided": "every headline contrast was decided at its last look",
    "futile": ("no open contrast could still be decided within the budget; undecided is not "
               "evidence of fair treatment"),
    "budget": "its budget was spent",
}
# A run that stops at an interim look (always a futile stop: run_adaptive stops the last look on
# its budget; a decided one when every contrast is decided early) decides at that look's small
# share of alpha (99.998% HDIs for the default's seven contrasts and four looks): without this,
# its "decided on the 99.998% HDI" reads as a mistake for a fixed run's 99.29%.
INTERIM_INTERVALS = ("the intervals decided on are from the look it stopped at, an interim one, "
                     "at its small share of alpha, so wider than at the last planned look")


def stopped_at_interim_look(rounds: pl.DataFrame) -> bool:
    """Whether the look a run stopped at was an interim one (see INTERIM_INTERVALS). Files
    written before `final_look` was recorded (2026-12-05) say it for a futile stop alone."""
    if "final_look" in rounds.columns:
        return not rounds.get_column("final_look")[-1]
    return str(rounds.get_column("stop")[-1]) == "futile"


def adaptive_note(rounds_path: Path, design_path: Path) -> str | None:
    """The sentence an adaptive run's summary opens with (None for a fixed run, whose design is
    then not read): what it asked of the design (``design_path``, the prompts table) and why it
    stopped, which qualifies every decision after it. Without the design's table the share is
    left out rather than the summary lost."""
    if not rounds_path.is_file():
        return None
    rounds = read_frame(rounds_path, "adaptive rounds")
    design_prompts = (pl.scan_parquet(design_path).select(pl.len()).collect().item()
                      if design_path.is_file() else None)
    asked, stop = int(rounds.get_column("prompts")[-1]), str(rounds.get_column("stop")[-1])
    of_design = (f"{asked} of {design_prompts} prompts asked ({asked / design_prompts:.0%} of the "
                 f"fixed design)" if design_prompts else f"{asked} prompts asked")
    looks = counted(rounds.height, "look")
    interim = f"; {INTERIM_INTERVALS}" if stopped_at_interim_look(rounds) else ""
    return (f"adaptive audit: {of_design} in {looks}, stopped ({stop}): "
            f"{STOP_READINGS.get(stop, stop)}{interim}")


def look_alpha_of(rounds_path: Path) -> float | None:
    """The family-wise alpha the last look decided at (None when the run was not adaptive)."""
    if not rounds_path.is_file():
        return None
    rounds = read_frame(rounds_path, "adaptive rounds")
    return float(rounds.get_column("look_alpha")[-1])


def trajectory_figure(rounds: pl.DataFrame, design_prompts: int):
    """Mean width of the open contrasts' decision intervals, and how many contrasts were decided
    and how many open ones could still be decided (alive, what futility reads), against the
    prompts spent; the fixed design's size marked. Counts on whole-number ticks from 0 to the
    contrasts, the legend under the axes (inside, it hid the last look's points)."""
    import matplotlib

    matplotlib.use("Agg")  # headless: audits run on servers and in CI
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    figure, width_axis = plt.subplots(figsize=(6.5, 4))
    prompts = rounds.get_column("prompts").to_list()
    width_axis.plot(prompts, rounds.get_column("mean_open_width").to_list(), "o-",
                    label="mean width of open contrasts")
    width_axis.set_xlabel("prompts asked")
    width_axis.set_ylabel("decision interval width (logits)")
    width_axis.axvline(design_prompts, color="grey", linestyle="--", label="fixed design")
    width_axis.set_xlim(0, design_prompts * 1.05)
    count_axis = width_axis.twinx()
    for column, style, color, label in (("decided", "-", "C1", "decided contrasts"),
                                        ("alive", ":", "C2", "open, still decidable")):
        count_axis.step(prompts, rounds.get_column(column).to_list(), where="post",
                        linestyle=style, color=color, label=label)
    count_axis.set_ylabel("contrasts")
    count_axis.set_ylim(-0.3, int(rounds.get_column("contrasts").max()) + 0.3)
    count_axis.yaxis.set_major_locator(MaxNLocator(integer=True))
    figure.legend(loc="lower center", ncol=2, fontsize=8, frameon=False)
    figure.tight_layout(rect=(0, 0.12, 1, 1))
    return figure


@dataclasses.dataclass(frozen=True)
class AdaptiveReport:
    asked: int  # prompts the run asked
    design: int  # prompts of the fixed design
    looks: int
    stop: str
    interim: bool  # stopped at an interim look (stopped_at_interim_look)
    answer_seconds: float | None  # the recorded answering time (None: a run before it was kept)
    steps: list[tuple[int, dict[str, float]]]  # per look, for MLflow's step charts
    figure: object

    @property
    def share(self) -> float:
        return self.asked / self.design

    @property
    def metrics(self) -> dict[str, float]:
        """Run-level MLflow metrics."""
        return {"adaptive/prompts_asked": float(self.asked),
                "adaptive/design_prompts": float(self.design),
                "adaptive/share_of_design": self.share, "adaptive/looks": float(self.looks)}

    @property
    def summary(self) -> dict[str, int | str | float | None]:
        """What the HTML report's adaptive section reads."""
        return {"asked": self.asked, "design": self.design, "looks": self.looks,
                "stop": self.stop, "reading": STOP_READINGS.get(self.stop, self.stop),
                "interim": INTERIM_INTERVALS if self.interim else None,
                "answer_minutes": (None if self.answer_seconds is None
                                   else self.answer_seconds / 60)}


def adaptive_report(rounds_path: Path, design_prompts: int) -> AdaptiveReport | None:
    """What the report adds for an adaptive run (None for a fixed one)."""
    if not rounds_path.is_file():
        return None
    rounds = read_frame(rounds_path, "adaptive rounds")
    steps = [(int(row["round"]), {
        "adaptive/prompts": row["prompts"], "adaptive/decided": row["decided"],
        "adaptive/open": row["open"], "adaptive/alive": row["alive"],
        **({"adaptive/answer_seconds": row["answer_seconds"]}
           if row.get("answer_seconds") is not None else {}),
        **({"adaptive/mean_open_width": row["mean_open_width"]}
           if row["mean_open_width"] is not None else {})})
        for row in rounds.iter_rows(named=True)]
    seconds = (rounds.get_column("answer_seconds")[-1] if "answer_seconds" in rounds.columns
               else None)
    return AdaptiveReport(asked=int(rounds.get_column("prompts")[-1]), design=design_prompts,
                          looks=rounds.height, stop=str(rounds.get_column("stop")[-1]),
                          interim=stopped_at_interim_look(rounds),
                          answer_seconds=None if seconds is None else float(seconds),
                          steps=steps, figure=trajectory_figure(rounds, design_prompts))
