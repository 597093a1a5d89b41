"""The judge panel refuses, in one line, a judge whose backend cannot do what its decoding asks."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from audit.cli.params import compose_params
from audit.config import ModelConfig
from audit.llm.backends import BackendError, ChatRequest, Message, create_backend
from audit.methods.configs import register_configs
from audit.errors import AuditError
from audit.methods.rasch.score import judge_panel

register_configs()
PROJECT_ROOT = Path(__file__).resolve().parents[4]
OLLAMA_JUDGE = ["judge.models.qwen_coder_1_5b.backend=ollama",
                "judge.models.qwen_coder_1_5b.model=llama3.1:8b"]


@pytest.mark.parametrize(("overrides", "asked"), [
    ([], "judge.decoding=letters"),
    (["judge.decoding=options", "judge.refusal_check=false"], "judge.decoding=options"),
    (["judge.decoding=json", "judge.refusal_check=true"], "judge.refusal_check=true"),
])
def test_an_ollama_judge_that_must_score_options_is_refused_with_the_fix(overrides, asked):
    with pytest.raises(AuditError) as refused:
        judge_panel(compose_params([*OLLAMA_JUDGE, *overrides]))
    message = str(refused.value)
    assert "\n" not in message
    assert "judge model 'qwen_coder_1_5b' (ollama) cannot score options" in message
    assert asked in message and "judge.decoding=json judge.refusal_check=false" in message


def test_option_scoring_of_an_ollama_audited_model_is_refused_with_the_fix():
    with pytest.raises(AuditError) as refused:
        judge_panel(compose_params(["model=ollama_llama3", "judge=logprob"]))
    message = str(refused.value)
    assert "audited model 'ollama_llama3' (ollama) cannot score options" in message
    assert "judge.method=logprob" in message and "judge.method=cascade" in message


def test_an_ollama_judge_that_writes_its_label_is_accepted():
    judges = judge_panel(compose_params([*OLLAMA_JUDGE, "judge.decoding=json",
                                   "judge.refusal_check=false"]))
    assert [judge.name for judge in judges] == ["qwen_coder_1_5b"]


def test_the_audit_stops_at_design_before_sending_any_prompt(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "audit", *OLLAMA_JUDGE, "tracking=none",
         f"paths.output_dir={tmp_path}", f"hydra.run.dir={tmp_path}",
         f"paths.response_store={tmp_path / 'responses.sqlite3'}"],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
        env={key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"})
    errors = [line for line in done.stderr.splitlines() if "cannot score options" in line]
    assert done.returncode != 0 and len(errors) == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "prompts.parquet").exists()
    assert not (tmp_path / "responses.parquet").exists()


def test_the_ollama_backends_own_refusal_names_settings_the_panel_accepts():
    """Bug caught (review 2026-12-04): the backend's refusal to score, the backstop behind the
    panel's check, said "use method=cascade", a value `method=` does not take, so the fix it
    named stopped the next run as an unknown option. Each role's settings it names now compose
    and pass the panel's check for that role."""
    backend = create_backend(ModelConfig(backend="ollama", model="llama3.1:8b"))
    with pytest.raises(BackendError) as refused:
        backend.complete(ChatRequest((Message("user", "x"),), 0.0, 1.0, 8, 1.0, 0,
                                     score_options=("APPROVE", "DENY")))
    fixes = re.search(r"; use (.+) for a judge model, (.+) for an audited one$",
                      str(refused.value))
    assert fixes, str(refused.value)
    judges = judge_panel(compose_params([*OLLAMA_JUDGE, *fixes[1].split()]))
    assert [judge.name for judge in judges] == ["qwen_coder_1_5b"]
    judge_panel(compose_params(["model=ollama_llama3", "judge=logprob", *fixes[2].split()]))


def test_score_options_alone_refuses_an_audited_model_that_cannot_score():
    """Bug caught: judge.score_options=true was not checked against the audited models'
    backends (only judge.method=logprob was), so an ollama model passed the design stage."""
    from audit.methods.rasch.score import check_judge_backends

    with pytest.raises(AuditError, match=r"^audited model 'ollama_llama3' \(ollama\) cannot score "
                                         r"options, which judge.score_options=true needs: use "
                                         r"judge.method=cascade judge.score_options=false"):
        check_judge_backends(compose_params(["model=ollama_llama3", "judge.score_options=true"]))


def test_every_model_that_must_score_is_checked_not_only_the_first():
    """Bug caught: the check stopped at the first model it looked at (the audited model, which
    can score), so the ollama judge behind it was not refused."""
    from audit.methods.rasch.score import check_judge_backends

    with pytest.raises(AuditError, match=r"^judge model 'qwen_coder_1_5b' \(ollama\) cannot"):
        check_judge_backends(compose_params([*OLLAMA_JUDGE, "judge.score_options=true"]))


def test_score_options_alone_hands_the_audited_models_backends_to_the_labelling(monkeypatch):
    """Bug caught: judge_tools took option scoring to mean judge.method=logprob only, so with
    judge.score_options=true the audited models' backends never reached the labelling and no
    answer was scored."""
    from audit.methods.rasch import score

    built = {}
    monkeypatch.setattr(score, "create_backend", lambda model: built.setdefault(model.model, model))
    monkeypatch.setattr(score, "backends_for", lambda cfg, prompts: {"m": "m's backend"})
    tools = score.judge_tools(compose_params(["judge.score_options=true"]), None)
    assert tools.scoring and tools.audited_backends == {"m": "m's backend"}
    plain = score.judge_tools(compose_params([]), None)
    assert not plain.scoring


def test_the_judges_without_option_scoring_still_get_the_audited_models_backends(monkeypatch):
    """Bug caught: the audited models' backends were built only for option scoring, so the
    check that warns of a judge that is an audited model's own weights file saw none."""
    from audit.methods.rasch import score

    monkeypatch.setattr(score, "create_backend", lambda model: model)
    monkeypatch.setattr(score, "backends_for", lambda cfg, prompts: {"m": "m's backend"})
    tools = score.judge_tools(compose_params([]), None)
    assert tools.judges and tools.audited_backends == {"m": "m's backend"}


def test_a_panel_keeps_every_judge_in_name_order(monkeypatch):
    """Bug caught: judge_panel kept only the first of a panel's judges, so the majority of three
    (judge=smollm2_panel) was one judge's label."""
    from audit.methods.rasch import score

    monkeypatch.setattr(score, "create_backend", lambda model: model)
    judges = judge_panel(compose_params(["judge=smollm2_panel"]))
    assert [judge.name for judge in judges] == ["greedy", "hot", "warm"]
