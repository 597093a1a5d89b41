"""What an adaptive run says at each look: warnings about the design are said once a run."""

from __future__ import annotations

import dataclasses
import logging

import polars as pl
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.llm.backends.fake import FakeBackend
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.rasch import adaptive_run, score
from audit.methods.rasch.design import design_stage

register_configs()


def adaptive_smoke_config(tmp_path, *overrides: str):
    """The smoke design asked adaptively in rounds, judged by a scripted API judge, with no
    futility stop (every look is made) and a short fit."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=[
            f"paths.output_dir={tmp_path}", f"paths.response_store={tmp_path}/store.sqlite3",
            "items=smoke", "personas=smoke", "judge=openai_gpt4o_mini",
            "judge.rationale_max_chars=0", "judge.evaluate_on_gold=false",
            "fit.judge_error=false", "fit.draws=100", "fit.tune=100", "fit.chains=1",
            "design.adaptive=true", "design.replicates=4", "design.futility=0", *overrides]))


def test_a_design_warning_is_said_once_an_adaptive_run_not_once_a_look(
        tmp_path, monkeypatch, caplog):
    """The smoke personas (a Black woman, a White man) alias gender with race. Every look's fit
    warned about it again: the same line four times in one run. Now once."""
    cfg = adaptive_smoke_config(tmp_path, "design.round_prompts=20")
    monkeypatch.setattr(score, "create_backend", FakeBackend)
    prompts = design_stage(cfg)
    rounds: list[int] = []

    def answered(cfg, asked, models, name):  # yes and no, alternately
        rounds.append(len(rounds))
        ids = asked["prompt_id"].to_list()
        texts = ["Yes, approve it." if index % 2 else "No, deny it." for index in range(len(ids))]
        return pl.DataFrame({
            "prompt_id": ids, "request_key": ids, "status": ["ok"] * len(ids),
            "response_text": texts, "error_kind": [None] * len(ids),
            "error_message": [None] * len(ids), "completion_tokens": [5] * len(ids),
            "latency_s": [0.1] * len(ids), "from_cache": [False] * len(ids)},
            schema_overrides={"error_kind": pl.String, "error_message": pl.String})

    monkeypatch.setattr(adaptive_run, "answer_prompts", answered)
    monkeypatch.setattr(adaptive_run, "models_for", lambda cfg, prompts: dict(cfg.model))
    with caplog.at_level(logging.WARNING):
        adaptive_run.respond_adaptively(cfg, prompts, tmp_path / "responses.parquet",
                                        tmp_path / "rounds.csv")
    aliased = [record for record in caplog.records
               if "a gap in one is a gap in the other" in record.getMessage()]
    assert len(rounds) >= 2, rounds  # several looks read the design
    assert len(aliased) == 1, [record.getMessage() for record in aliased]


def test_failures_are_counted_over_every_request_so_far_as_a_fixed_run_counts_them(
        tmp_path, monkeypatch):
    """Bug caught (adaptive review 2026-12-02): engine.max_failed_share was applied to each
    round's requests alone, so one failure in a round of 15 (6.7%) stopped a run that had
    asked 45 (2.2%), which a fixed run of the same design would have accepted. Counted over
    every request so far, the run goes on; beyond the share it stops, naming the count."""
    from audit.llm.failures import TooManyFailures

    def run(share: float) -> list[int]:
        cfg = adaptive_smoke_config(tmp_path, "design.round_prompts=15",
                                    f"engine.max_failed_share={share}")
        monkeypatch.setattr(score, "create_backend", FakeBackend)
        prompts = design_stage(cfg)
        rounds: list[int] = []

        def answered(cfg, asked, models, name):  # one timeout in the second round
            ids = asked["prompt_id"].to_list()
            failed = [len(rounds) == 1 and index == 0 for index in range(len(ids))]
            rounds.append(len(ids))
            return pl.DataFrame({
                "prompt_id": ids, "request_key": ids,
                "status": ["error" if bad else "ok" for bad in failed],
                "response_text": [None if bad else ("Yes, approve it." if index % 2 else
                                                    "No, deny it.")
                                  for index, bad in enumerate(failed)],
                "error_kind": ["timeout" if bad else None for bad in failed],
                "error_message": ["timed out" if bad else None for bad in failed],
                "completion_tokens": [5] * len(ids), "latency_s": [0.1] * len(ids),
                "from_cache": [False] * len(ids)},
                schema_overrides={"error_kind": pl.String, "error_message": pl.String,
                                  "response_text": pl.String})

        monkeypatch.setattr(adaptive_run, "answer_prompts", answered)
        monkeypatch.setattr(adaptive_run, "models_for", lambda cfg, prompts: dict(cfg.model))
        adaptive_run.respond_adaptively(cfg, prompts, tmp_path / "responses.parquet",
                                        tmp_path / "rounds.csv")
        return rounds

    asked = run(share=0.05)
    assert len(asked) >= 3 and sum(asked[:2]) == 30, asked  # 1 of 30 so far: 3.3%, on it goes
    try:
        run(share=0.02)
    except TooManyFailures as error:
        assert "1 of 30 Rasch requests (to round 1) failed" in str(error)
    else:
        raise AssertionError("a failure beyond the share did not stop the run")


def test_round_0_alone_labels_the_gold_set_and_every_look_reads_it(tmp_path, monkeypatch):
    """Bug caught: the judge's gold set labelled again after round 0, or a later round's empty
    gold kept in place of round 0's, so the looks after round 0 fitted without the judge's
    error rates."""
    cfg = adaptive_smoke_config(tmp_path, "design.round_prompts=20")
    monkeypatch.setattr(score, "create_backend", FakeBackend)
    prompts = design_stage(cfg)
    real_judge = adaptive_run.judge_stage
    with_gold: list[bool] = []
    read: list[object] = []

    def answered(cfg, asked, models, name):
        ids = asked["prompt_id"].to_list()
        return pl.DataFrame({
            "prompt_id": ids, "request_key": ids, "status": ["ok"] * len(ids),
            "response_text": ["Yes, approve it." if index % 2 else "No, deny it."
                              for index in range(len(ids))],
            "error_kind": [None] * len(ids), "error_message": [None] * len(ids),
            "completion_tokens": [5] * len(ids), "latency_s": [0.1] * len(ids),
            "from_cache": [False] * len(ids)},
            schema_overrides={"error_kind": pl.String, "error_message": pl.String})

    def judging(cfg, asked, responses, **kwargs):  # a gold result that names its round
        judged = real_judge(cfg, asked, responses, **kwargs)
        with_gold.append(kwargs["with_gold"])
        if not kwargs["with_gold"]:
            return judged
        return dataclasses.replace(judged, gold=pl.DataFrame({"round": [len(with_gold) - 1]}))

    def resolving(*args):  # (judge_error, model, outcome, gold or None, drop_labels)
        read.append(None if args[3] is None else args[3]["round"].to_list())

    monkeypatch.setattr(adaptive_run, "answer_prompts", answered)
    monkeypatch.setattr(adaptive_run, "models_for", lambda cfg, prompts: dict(cfg.model))
    monkeypatch.setattr(adaptive_run, "judge_stage", judging)
    monkeypatch.setattr(adaptive_run, "resolve_confusion", resolving)
    adaptive_run.respond_adaptively(cfg, prompts, tmp_path / "responses.parquet",
                                    tmp_path / "rounds.csv")
    assert len(with_gold) >= 2, with_gold
    assert with_gold == [True] + [False] * (len(with_gold) - 1)
    assert read == [[0]] * len(with_gold)  # every look's fit reads round 0's gold results
