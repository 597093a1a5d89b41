"""The runs table picks the headline columns of the method whose runs it shows: each run records
them (its method's HEADLINE_METRICS) in a tag, so the table names no method."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

from audit.methods import headline_metrics
from audit.tracking.runs_table import (HEADLINE_TAG, metric_columns, runs_frame, started_text,
                                       unmatched_patterns, varying_params)

# 2026-12-02 12:55 UTC, in milliseconds as MLflow records a run's start
STARTED_MS = 1_796_216_100_000


def _run(method: str, metrics: dict[str, float]) -> dict:
    tags = {"method": method, HEADLINE_TAG: ",".join(headline_metrics(method))}
    return {"run_id": "r", "name": "n", "start_time": 0, "status": "FINISHED",
            "tags": tags, "params": {}, "metrics": metrics}


def test_iat_runs_show_iat_columns_and_not_the_samplers():
    runs = [_run("iat", {"iat/n_scored": 10.0, "iat/parse_rate": 0.9,
                         "iat/smollm2/race/mean_d": 0.2, "iat/smollm2/race/p_value": 0.1,
                         "rhat_max": 1.0})]
    assert metric_columns(runs, []) == ["iat/n_scored", "iat/parse_rate",
                                        "iat/smollm2/race/mean_d"]


def test_a_mixed_table_shows_each_methods_columns_and_the_asked_for_ones():
    runs = [_run("rasch", {"n_prompts": 5.0, "rhat_max": 1.01, "theta_mean/a": 0.1}),
            _run("counterfactual", {"n_prompts": 8.0, "n_pairs_flagged": 2.0, "n_pairs": 6.0})]
    assert metric_columns(runs, ["theta_mean/*"]) == [
        "n_prompts", "n_pairs", "n_pairs_flagged", "rhat_max", "theta_mean/a"]


def test_a_run_logged_before_the_tag_gets_its_methods_columns_from_the_caller():
    run = _run("iat", {"iat/n_scored": 10.0, "rhat_max": 1.0})
    del run["tags"][HEADLINE_TAG]
    assert metric_columns([run], []) == []
    assert metric_columns([run], [], headline_metrics) == ["iat/n_scored"]


def test_a_metric_pattern_that_matches_nothing_is_named_with_the_closest_names():
    """Bug caught (bad-input review 2026-12-04): `audit.runs --metric 'contrst/*'` added no
    column and said nothing; a pattern that matches stays quiet."""
    runs = [_run("rasch", {"n_prompts": 5.0, "contrast/m/race/a_vs_b/mean": 0.1})]
    assert unmatched_patterns(runs, ["contrast/*", "n_prompts"]) == []
    [line] = unmatched_patterns(runs, ["contrst*"])
    assert line.startswith("--metric 'contrst*' matches no metric of these runs (closest: "
                           "contrast/*);"), line
    [line] = unmatched_patterns(runs, ["zzz"])
    assert "(they have: contrast/*, n_prompts);" in line


def test_only_a_run_from_changed_code_is_marked_dirty():
    """Bug caught: a run whose code was clean (audit.dirty "false") or unknown was shown as
    "+dirty", so the table called every run's code changed."""
    runs = []
    for dirty in ("true", "false"):
        run = _run("iat", {})
        run["tags"].update({"audit.commit": "0123456789abcdef", "audit.dirty": dirty})
        runs.append(run)
    run = _run("iat", {})
    runs.append(run)  # no commit recorded: code_state gives ("", "unknown")
    # The first 10 characters of the commit, "+dirty" only for "true".
    assert runs_frame(runs)["commit"].to_list() == ["0123456789+dirty", "0123456789", ""]


@contextlib.contextmanager
def local_zone(zone: str) -> Iterator[None]:
    """The process's local time zone set to `zone` (a POSIX TZ value), then put back."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


def test_the_started_column_is_date_hours_and_minutes_and_blank_without_a_start():
    """Bugs it would catch: seconds added to the column, or a run with no start time (None, or
    the 0 of a run that recorded none) shown as 1970-01-01."""
    with local_zone("UTC0"):
        assert started_text(STARTED_MS) == "2026-12-02 12:55 +00:00"
        assert started_text(STARTED_MS + 59_999) == "2026-12-02 12:55 +00:00"
        assert started_text(None) == started_text(0) == ""


def test_the_started_time_names_its_offset_so_it_is_one_moment_on_any_machine():
    """Bug (mutation review 2026-12-06): the start was local time with no zone, so one run read
    "2026-12-02 12:55" on a UTC machine and "18:25" at UTC+05:30: a sweep's sweep_runs.csv
    (written where the sweep ran) and `audit.runs --csv` disagreed with no way to tell."""
    with local_zone("IST-5:30"):
        assert started_text(STARTED_MS) == "2026-12-02 18:25 +05:30"


def test_varying_params_list_shallow_keys_before_nested_ones():
    """Bug it would catch: params in plain alphabetical order, so `design.seed` came after
    `dif.x.y` and a sweep's top-level settings were scattered among nested ones."""
    runs = []
    for value in ("1", "2"):
        run = _run("rasch", {})
        run["params"] = {"model.m.sampling.temperature": value, "seed": value,
                         "dif.x": value, "design.seed": value}
        runs.append(run)
    assert varying_params(runs) == ["seed", "design.seed", "dif.x",
                                    "model.m.sampling.temperature"]


def test_a_run_that_logged_no_metrics_adds_no_headline_columns():
    """Bug it would catch: a run that failed before logging a metric still declared its
    method's columns, so a failed Rasch run put the IAT runs' sampler `rhat_max` in the table."""
    failed = _run("rasch", {})
    iat = _run("iat", {"iat/n_scored": 10.0, "rhat_max": 1.0})
    assert metric_columns([failed, iat], []) == ["iat/n_scored"]


def test_the_names_one_pattern_matches_are_columns_in_name_order():
    """Bug it would catch: the names a pattern matched taken in set order, so the columns of
    `--metric 'theta_mean/*'` came in a different order each run."""
    names = [f"theta_mean/{letter}" for letter in "hgfedcba"]
    runs = [_run("rasch", dict.fromkeys(names, 0.0))]
    assert metric_columns(runs, ["theta_mean/*"]) == sorted(names)


def test_an_unmatched_pattern_is_matched_to_a_family_without_its_wildcards_or_with_a_typo():
    """Bugs it would catch: the wildcards of `??rhat` kept in the name compared (no family was
    close), or a stricter cut that missed a close family name (`contr/*` for `contrast/*`)."""
    runs = [_run("rasch", {"rhat_max": 1.0, "contrast/m/race/a_vs_b/mean": 0.1})]
    [line] = unmatched_patterns(runs, ["??rhat"])
    assert "(closest: rhat_max);" in line, line
    [line] = unmatched_patterns(runs, ["contr/*"])
    assert "(closest: contrast/*);" in line, line


def test_an_unmatched_pattern_names_at_most_four_families_and_says_when_there_are_more():
    """Bugs it would catch: the list cut at four families with no `...`, or runs that logged
    no metric at all described as having an empty list."""
    runs = [_run("rasch", dict.fromkeys(["alpha", "beta", "gamma", "delta", "epsilon"], 1.0))]
    [line] = unmatched_patterns(runs, ["zzz"])
    assert "(they have: alpha, beta, delta, epsilon, ...);" in line, line
    [line] = unmatched_patterns([_run("rasch", {})], ["zzz"])
    assert "(they logged none);" in line, line


def test_a_run_without_a_converged_tag_shows_a_blank_not_a_verdict():
    """Bug it would catch: a run with no `converged` tag (a sweep parent, a method with no
    sampler) shown as converged or not."""
    run = _run("iat", {})
    assert runs_frame([run])["converged"].to_list() == [""]
