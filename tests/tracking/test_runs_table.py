"""The runs table picks the headline columns of the method whose runs it shows: each run records
them (its method's HEADLINE_METRICS) in a tag, so the table names no method."""

from __future__ import annotations

from audit.methods import headline_metrics
from audit.tracking.runs_table import (HEADLINE_TAG, metric_columns, runs_frame,
                                       unmatched_patterns)


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
