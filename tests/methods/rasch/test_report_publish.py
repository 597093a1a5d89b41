"""What the report stage (report/publish.py) reads from the fit's record and the backends before
it writes: the fit's advice, the judge's gaps, the models' identities. Mutation review
2026-12-06: each test fails under a change the other fast tests let pass."""

from __future__ import annotations

import json

from audit.config import ModelConfig
from audit.methods.configs import AuditConfig
from audit.methods.rasch.irt import Diagnostics
from audit.methods.rasch.report import publish
from audit.methods.rasch.report.publish import (
    as_truth_rows,
    fit_advice,
    identity_tags,
    judge_gaps,
    model_identities,
    read_contrasts,
    recorded_diagnostics,
)


def _diagnostics(rhat_max: float) -> Diagnostics:
    return Diagnostics(rhat_max=rhat_max, ess_bulk_min=900.0, ess_tail_min=900.0, divergences=0,
                       rhat_limit=1.01, ess_limit=400.0)


def test_the_fits_own_advice_is_given_only_when_the_fit_did_not_converge():
    advice = {"advice": "raise fit.tune to 2000"}
    assert fit_advice(_diagnostics(1.0), advice) == []
    assert fit_advice(_diagnostics(1.5), advice) == ["raise fit.tune to 2000"]
    (problem,) = fit_advice(_diagnostics(1.5), {})
    assert problem.startswith("R-hat max 1.500 > 1.01")


def test_judge_gaps_name_each_outcome_in_order_and_every_reason(tmp_path):
    record = tmp_path / "diagnostics.json"
    record.write_text(json.dumps({"judge_error": {
        "refusal": {"labels_as_truth": ["judge:b"], "weak_gold": {}},
        "favourable": {"labels_as_truth": [],
                       "weak_gold": {"rule": ["2 gold answers", "no refusal among them"]}}}}))
    gaps = judge_gaps(recorded_diagnostics(record))
    assert len(gaps) == 2
    assert gaps[0].startswith("labelling path rule (favourable) is barely measured: "
                              "2 gold answers; no refusal among them; its rates")
    assert gaps[1].startswith("the labels of judge:b (refusal) were read as truth")


def test_the_rate_rows_read_as_truth_gather_every_outcomes_paths_sorted():
    recorded = {"judge_error": {"refusal": {"labels_as_truth": ["p4", "p2", "p0"]},
                                "favourable": {"labels_as_truth": ["p3", "p1"]},
                                "needs_more_information": None}}
    assert as_truth_rows(recorded) == [f"{rate}[p{index}]" for index in range(5)
                                       for rate in ("judge_sensitivity", "judge_specificity")]


def test_a_fit_that_wrote_no_contrasts_has_none(tmp_path):
    assert read_contrasts(tmp_path / "contrasts.csv") is None


def test_identity_tags_give_each_model_one_line_and_its_digest():
    tags = identity_tags({"model.m": {"backend": "fake", "model": "fake-m", "digest": "abc"},
                          "judge_model.j": {"backend": "ollama", "model": "qwen"}})
    assert tags == {"model.m": "backend=fake model=fake-m digest=abc", "model.m.digest": "abc",
                    "judge_model.j": "backend=ollama model=qwen digest=",
                    "judge_model.j.digest": ""}


def test_a_backend_that_cannot_say_its_identity_leaves_the_run_with_the_error_named(
        monkeypatch):
    class Down:
        def identity(self):
            raise ConnectionError("refused")

    class Up:
        def identity(self):
            return {"backend": "fake", "model": "fake-m", "digest": "abc"}

    monkeypatch.setattr(publish, "create_backend",
                        lambda model: Down() if model.backend == "ollama" else Up())
    cfg = AuditConfig(model={"m": ModelConfig(backend="fake", model="fake-m")})
    cfg.judge.models = {"j": ModelConfig(backend="ollama", model="qwen")}
    assert model_identities(cfg) == {
        "model.m": {"backend": "fake", "model": "fake-m", "digest": "abc"},
        "judge_model.j": {"backend": "ollama", "model": "qwen",
                          "digest": "unavailable (ConnectionError)"}}
