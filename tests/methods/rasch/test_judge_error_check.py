"""fit.judge_error=true settings the fit could never honour are refused at the design stage."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.errors import AuditError
from audit.methods.configs import AuditConfig, register_configs, to_audit_config
from audit.methods.rasch.analyse import check_judge_error

register_configs()


def _compose(overrides: list[str]) -> AuditConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=["paths.output_dir=out", *overrides]))


@pytest.mark.parametrize(("overrides", "fix"), [
    (["judge=logprob"], "use a judge that reads the answers"),
    (["judge.evaluate_on_gold=false"], "set judge.evaluate_on_gold=true"),
    (["fit=rasch_seed"], "use fit=rasch"),
    (["fit=hurdle"], "3 x 3 confusion matrix"),
])
def test_an_impossible_judge_error_request_is_refused_before_answering(overrides, fix):
    """Bug caught: these were found only at the fit, after every answer was asked, and for
    judge=logprob the advice (set judge.evaluate_on_gold=true) could not help: the gold set is
    labelled only by a cascade judge. Each case now fails at design with its own fix."""
    with pytest.raises(AuditError, match=fix) as error:
        check_judge_error(_compose(["fit.judge_error=true", *overrides]))
    assert "\n" not in str(error.value)


def test_possible_or_unset_requests_pass():
    check_judge_error(_compose(["fit.judge_error=true"]))  # the default cascade judge
    check_judge_error(_compose(["judge=logprob"]))  # unset: labels as truth, no gold


def test_the_design_stage_checks_it_before_writing_prompts(tmp_path):
    from audit.methods.rasch.method import _design

    cfg = _compose(["fit.judge_error=true", "judge=logprob"])
    with pytest.raises(AuditError, match="judge.method=logprob labels no gold answer"):
        _design(cfg, None, None)  # type: ignore[arg-type]  # fails before it reads them
