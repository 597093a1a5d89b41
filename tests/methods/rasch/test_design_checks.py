"""Settings the design stage refuses before any prompt is sent: a judge (or audited model) whose
API key variable is unset, and a second outcome coding that repeats the first."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.errors import AuditError
from audit.methods.configs import AuditConfig, register_configs, to_audit_config
from audit.methods.rasch.analyse import check_outcomes
from audit.methods.rasch.score import check_api_keys

register_configs()


def _compose(overrides: list[str]) -> AuditConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=["paths.output_dir=out", *overrides]))


def test_a_judge_without_its_api_key_is_refused_at_design(monkeypatch):
    """Bug caught: the judge's backend was built only in the score stage, so an unset
    OPENAI_API_KEY stopped the run after every answer had been bought."""
    from audit.methods.rasch.method import _design

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = _compose(["judge=openai_gpt4o_mini"])
    with pytest.raises(AuditError, match="judge model 'gpt4o_mini' .* OPENAI_API_KEY") as error:
        _design(cfg, None, None)  # type: ignore[arg-type]  # fails before it reads them
    assert "\n" not in str(error.value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    check_api_keys(cfg)  # set: accepted
    monkeypatch.setenv("OPENAI_API_KEY", "")
    with pytest.raises(AuditError, match="OPENAI_API_KEY"):
        check_api_keys(cfg)  # empty counts as unset, as the backend itself reads it


def test_a_key_variable_on_a_backend_that_reads_none_is_not_required(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VARIABLE", raising=False)
    check_api_keys(_compose(["model=ollama_llama3",
                             "model.ollama_llama3.api_key_env=NO_SUCH_KEY_VARIABLE"]))


def test_a_second_outcome_that_repeats_the_first_is_refused_at_design():
    """It fitted the same coding twice and reported every contrast twice."""
    from audit.methods.rasch.method import _design

    cfg = _compose(["judge=rules_only", "fit.second_outcome=favourable"])
    with pytest.raises(AuditError, match="fit.second_outcome=favourable is fit.outcome already"):
        _design(cfg, None, None)  # type: ignore[arg-type]
    check_outcomes(_compose(["fit.second_outcome=undetermined"]))
