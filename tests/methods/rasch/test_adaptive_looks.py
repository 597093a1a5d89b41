"""What an adaptive run says at each look: warnings about the design are said once a run."""

from __future__ import annotations

import logging

import polars as pl
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.llm.backends.fake import FakeBackend
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.rasch import adaptive_run, score
from audit.methods.rasch.design import design_stage

register_configs()


def test_a_design_warning_is_said_once_an_adaptive_run_not_once_a_look(
        tmp_path, monkeypatch, caplog):
    """The smoke personas (a Black woman, a White man) alias gender with race. Every look's fit
    warned about it again: the same line four times in one run. Now once."""
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = to_audit_config(compose("config", overrides=[
            f"paths.output_dir={tmp_path}", f"paths.response_store={tmp_path}/store.sqlite3",
            "items=smoke", "personas=smoke", "judge=openai_gpt4o_mini",
            "judge.rationale_max_chars=0", "judge.evaluate_on_gold=false",
            "fit.judge_error=false", "fit.draws=100", "fit.tune=100", "fit.chains=1",
            "design.adaptive=true", "design.replicates=4", "design.round_prompts=20",
            "design.futility=0"]))  # no futility stop: every look is made
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
