"""The arguments of `python -m audit.compare` (audit.cli.compare), read and checked before the
runs are fetched and before the sampler loads (audit.cli.compare_run)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

from audit.cli import check_given_once
from audit.errors import AuditError, did_you_mean
from audit.outputs import check_junit_output, check_output

log = logging.getLogger("audit.compare")

USAGE = ("usage: python -m audit.compare A [B] [model_a=NAME] [model_b=NAME] [max_worsening=DELTA|"
         "DELTApp] [worsening_prob=0.95] [items=shared|all] [output=DIR] [junit=PATH] [draws=N] "
         "[tune=N] [chains=N] [target_accept=P] [tracking_uri=URI] [tracking=false] "
         "[judge_error=false]")
OPTIONS = ("model_a", "model_b", "max_worsening", "worsening_prob", "items", "output", "junit",
           "draws", "tune", "chains", "target_accept", "tracking_uri", "tracking", "judge_error")


def boolean_option(options: dict[str, str], key: str) -> bool | None:
    """key=true|false in any case; None when not given. `tracking=False` logged a run: only
    the lowercase `false` turned it off (compare review 2026-12-02)."""
    if key not in options:
        return None
    choice = {"false": False, "true": True}.get(options[key].lower())
    if choice is None:
        raise AuditError(f"{key}={options[key]} must be true or false; {USAGE}")
    return choice


def items_option(options: dict[str, str]) -> str:
    choice = options.get("items", "shared")
    if choice not in ("shared", "all"):
        raise AuditError(f"items={choice} must be shared (the items both runs asked) or all; "
                         f"{USAGE}")
    return choice


def _is_option(argument: str) -> bool:
    """key=value, unless the key is no option and the whole names a path: a run written to
    paths.output_dir=runs/temperature=0.7 was refused as "unknown option runs/temperature"."""
    key, separator, _ = argument.partition("=")
    return bool(separator) and (key in OPTIONS or not Path(argument).exists())


def parse_arguments(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    flag = next((argument for argument in argv if argument.startswith("--")), None)
    if flag is not None:  # it counted as a third run: "give one or two runs"
        key = flag[2:].split("=", 1)[0].replace("-", "_")
        hint = f" (write {key}=VALUE)" if key in OPTIONS else ""
        raise AuditError(f"{flag} is not an option: options are key=value{hint}; {USAGE}")
    given = [argument for argument in argv if _is_option(argument)]  # one look at the disk each
    sources = [argument for argument in argv if argument not in given]
    options = dict(argument.split("=", 1) for argument in given)
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown or not 1 <= len(sources) <= 2:
        problem = (f"unknown option {unknown[0]}{did_you_mean(unknown[0], list(OPTIONS))}"
                   if unknown else "give one or two runs")
        raise AuditError(f"{problem}; {USAGE}")
    # `output=` was the current folder, `draws=` "is not an integer" (review 12-04); a key given
    # twice let the last value win without a word.
    check_given_once(given, AuditError, USAGE)
    if len(sources) == 1 and not ("model_a" in options and "model_b" in options):
        raise AuditError("one run needs model_a=NAME and model_b=NAME (two of its models); "
                         f"{USAGE}")
    return sources, options


def number(options: dict[str, str], key: str, kind: type, default: float | None = None):
    try:
        return kind(options[key]) if key in options else default
    except ValueError:
        raise AuditError(f"{key}={options[key]} is not a{'n integer' if kind is int else ' number'}"
                         f"; {USAGE}") from None


def sampling_options(options: dict[str, str]) -> dict[str, int | float]:
    """draws=, tune=, chains=, target_accept=: checked here, since the sampler would only refuse
    a draws=0 after tuning (35 s), with a ValueError and exit 1."""
    sampling = {key: number(options, key, float if key == "target_accept" else int)
                for key in ("draws", "tune", "chains", "target_accept") if key in options}
    for key in ("draws", "tune", "chains"):
        if sampling.get(key, 1) < 1:
            raise AuditError(f"{key}={sampling[key]} must be at least 1")
    if not 0.0 < sampling.get("target_accept", 0.8) < 1.0:
        raise AuditError(f"target_accept={sampling['target_accept']} must lie between 0 and 1 "
                         "(0.8; 0.95 for a fit with divergences)")
    return sampling


def worsening_limit(text: str | None) -> tuple[float | None, str]:
    if text is None:
        return None, "logit"
    unit = "pp" if text.endswith("pp") else "logit"
    try:
        value = float(text.removesuffix("pp"))
    except ValueError:
        raise AuditError(f"max_worsening={text} is not a number: give logits (0.3) or "
                         "percentage points (5pp)") from None
    if not math.isfinite(value):  # nan never compared true: a gate that could not fail
        raise AuditError(f"max_worsening={text} must be a finite number: give logits (0.3) or "
                         "percentage points (5pp)")
    if value < 0:
        raise AuditError(f"max_worsening={text} must be >= 0")
    if unit == "pp" and value >= 100:  # |gap_B| - |gap_A| of two probabilities is below 100pp
        raise AuditError(f"max_worsening={text} can never be exceeded, so it gates nothing: a "
                         "gap in percentage points grows by less than 100pp; give less")
    return value, unit


# What a comparison writes in its output folder.
OUTPUT_FILES = ("changes.csv", "changes_forest.png", "report.html", "posterior.nc")


def output_paths(options: dict[str, str], sources: list[str]) -> tuple[Path, Path]:
    """The output folder and the JUnit file (given, or named after the two runs), checked before
    the fit: a path that cannot be written was a traceback after it, with exit 1, the code of a
    failed gate, so CI could not tell a crash from a worsening."""
    # One run's two models: the models name the folder, or the next pair overwrote it.
    models = ("" if len(set(sources)) > 1 else
              f"_{options.get('model_a', '')}_vs_{options.get('model_b', '')}")
    out = Path(options.get("output", f"compare/{Path(sources[0]).name[:8]}_vs_"
                                     f"{Path(sources[-1]).name[:8]}{models}"))
    junit = Path(options.get("junit", out / "compare_junit.xml"))
    check_output(out, "output=", folder=True)
    for name in OUTPUT_FILES:  # a folder already there under a file's name
        check_output(out / name, "output=")
    return out, check_junit_output(junit)


@dataclass(frozen=True)
class CompareArguments:
    """The command's arguments, read and checked before any run is fetched or fitted."""

    sources: list[str]
    options: dict[str, str]
    limit: float | None  # max_worsening, in `unit`; None: no contrast is gated
    unit: str
    sampling: dict[str, int | float]
    worsening_prob: float
    judge_error: bool | None  # None: run A's fit.judge_error
    items: str
    tracked: bool


def read_arguments(argv: list[str]) -> CompareArguments:
    sources, options = parse_arguments(argv)
    limit, unit = worsening_limit(options.get("max_worsening"))
    sampling = sampling_options(options)
    if "junit" in options:  # a bad path is the one line, not after this warning (review 12-04)
        check_junit_output(Path(options["junit"]))
    if limit is None and "junit" in options:  # a CI gate that cannot fail on a worsening
        log.warning("junit= without max_worsening: no contrast can fail the gate, only a fit "
                    "that did not converge; pass max_worsening=DELTA (logits, or DELTApp)")
    worsening_prob = number(options, "worsening_prob", float, 0.95)
    if not 0.0 < worsening_prob < 1.0:  # checked before the fit, not after it
        raise AuditError(f"worsening_prob={worsening_prob} must lie between 0 and 1 (0.95)")
    return CompareArguments(sources, options, limit, unit, sampling, worsening_prob,
                            boolean_option(options, "judge_error"), items_option(options),
                            boolean_option(options, "tracking") is not False)
