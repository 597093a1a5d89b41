"""Every config section's values are checked against their fields' declared ranges and choices
when the config is composed (audit.config_ranges), so a nonsense setting is one line and exit 2
before any prompt is sent, not a traceback after the answering (or a silently wrong run)."""

from __future__ import annotations

import dataclasses
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.config_ranges import (ConfigValueError, Range, check_config, config_problems,
                                 settings, value_problem)
from audit.methods.configs import AuditConfig, VerdictConfig, register_configs, to_audit_config
from audit.methods.rasch.config import ENGINES, MODELS, OUTCOMES, RESPONSES
from audit.methods.rasch.irt.outcome import OUTCOME_CODINGS

register_configs()
PROJECT_ROOT = Path(__file__).resolve().parents[1]
# The subprocesses run in a scratch folder: this checkout's code, not an installed one.
ENV = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")}


def _compose(overrides: list[str]) -> AuditConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("config", overrides=["paths.output_dir=out", *overrides])
    return to_audit_config(composed)


# Bugs caught: each of these was accepted at composition. hdi_prob, judge_imputations, draws
# crashed with a traceback in the analyse stage after every answer was bought; a negative rope
# turned the decision rule inside out (tight intervals at 0 called `different`); familywise_alpha,
# model, outcome were refused only at the analyse stage; the engine and persona values ran with
# no warning (requests_per_minute=0 meant no limit, null_count=-2 dropped the placebo arm).
@pytest.mark.parametrize(("overrides", "message"), [
    (["fit.hdi_prob=1.5"], "fit.hdi_prob=1.5 must lie in (0, 1)"),
    (["fit.judge_imputations=0"], "fit.judge_imputations=0 must lie in [1, 1000]"),
    (["fit.draws=0"], "fit.draws=0 must lie in [1, inf)"),
    (["fit.rope=-0.5"], "fit.rope=-0.5 must lie in [0, inf)"),
    (["fit.familywise_alpha=2"], "fit.familywise_alpha=2.0 must lie in (0, 1)"),
    # review2 tests.md finding 7: a value on an open upper bound. hdi_prob=1 makes the HDI the
    # draws' whole range (almost nothing `different`: a gate that cannot fail); a check that
    # ignored open_high accepted both.
    (["fit.hdi_prob=1"], "fit.hdi_prob=1.0 must lie in (0, 1)"),
    # A share given as a percent names the share meant; a value no percent explains does not.
    (["fit.hdi_prob=94"], "fit.hdi_prob=94.0 must lie in (0, 1): a share, so fit.hdi_prob=0.94 "
                          "for 94%"),
    (["engine.max_failed_share=5"], "engine.max_failed_share=5.0 must lie in [0, 1]: a share, "
                                    "so engine.max_failed_share=0.05 for 5%"),
    (["fit.familywise_alpha=1"], "fit.familywise_alpha=1.0 must lie in (0, 1)"),
    (["fit.model=populaton"], "fit.model=populaton is not one of rasch, rasch_seed, twopl"),
    (["fit.outcome=favorable"], "fit.outcome=favorable is not one of favourable, undetermined"),
    (["fit.second_outcome=refusal"], "fit.second_outcome=refusal is not one of favourable"),
    (["engine.requests_per_minute=0"], "engine.requests_per_minute=0.0 must lie in (0, inf)"),
    (["engine.requests_per_minute=-5"], "engine.requests_per_minute=-5.0 must lie in (0, inf)"),
    (["engine.max_attempts=0"], "engine.max_attempts=0 must lie in [1, inf)"),
    (["engine.max_failed_share=-1"], "engine.max_failed_share=-1.0 must lie in [0, 1]"),
    (["engine.backoff_initial_s=-1"], "engine.backoff_initial_s=-1.0 must lie in [0, inf)"),
    (["model=vllm", "model.vllm.max_concurrency=0"],
     "model.vllm.max_concurrency=0 must lie in [1, inf)"),
    (["model=vllm", "model.vllm.timeout_s=-1"], "model.vllm.timeout_s=-1.0 must lie in (0, inf)"),
    (["judge=smollm2", "judge.models.smollm2.sampling.top_p=0"],
     "judge.models.smollm2.sampling.top_p=0.0 must lie in (0, 1]"),
    (["personas.null_count=-2"], "personas.null_count=-2 must lie in [0, inf)"),
    # Judge review 2026-12-02: 0 passed, then polars' group_by().head(0) gave one empty row per
    # kind and the score stage died with a TypeError traceback (judge.evaluate_on_gold=false is
    # how to skip the gold set).
    (["judge.gold_per_category=0"], "judge.gold_per_category=0 must lie in [1, inf)"),
    (["design.replicates=0"], "design.replicates=0 must lie in [1, inf)"),
    # The adaptive budgets were checked only at the respond stage, after the design stage ran.
    (["design.adaptive=true", "design.futility=1.5"], "design.futility=1.5 must lie in [0, 1)"),
    (["design.adaptive=true", "design.round_prompts=0"],
     "design.round_prompts=0 must lie in [1, inf)"),
    (["design.adaptive=true", "design.max_answer_minutes=0"],
     "design.max_answer_minutes=0.0 must lie in (0, inf)"),
    (["plan.simulations=0"], "plan.simulations=0 must lie in [1, inf)"),
    # The lists of design sizes audit.plan tries: 0 replicates crashed in polars after the
    # simulations, an empty list in polars.concat, a negative persona multiple ran simulations.
    (["plan.replicates=[2,0]"], "plan.replicates=[2, 0]: 0 must lie in [1, inf)"),
    (["plan.replicates=[]"], "plan.replicates=[] must name at least one value in [1, inf)"),
    (["plan.persona_multiples=[-1]"], "plan.persona_multiples=[-1]: -1 must lie in [1, inf)"),
    # Bad-input review 2026-12-04: a negative seed stopped nutpie with an OverflowError
    # traceback after every prompt was answered (fit.seed), numpy's generator while drawing the
    # null personas (design.seed) or the plan's simulations (plan.seed); so did one over 2**64.
    (["fit.seed=-1"], "fit.seed=-1 must lie in [0, 4294967294]"),
    (["design.seed=-1"], "design.seed=-1 must lie in [0, 4294967294]"),
    (["plan.seed=99999999999999999999"],
     "plan.seed=99999999999999999999 must lie in [0, 4294967294]"),
    (["method=iat", "iat.seed=-1"], "iat.seed=-1 must lie in [0, 4294967294]"),
    (["method=dif", "dif.seed=-1"], "dif.seed=-1 must lie in [0, 4294967294]"),
    # 2**32 - 1 is llama.cpp's LLAMA_DEFAULT_SEED, "random": DIF sends its seed as the request's.
    (["method=dif", "dif.seed=4294967295"], "dif.seed=4294967295 must lie in [0, 4294967294]"),
    # Bad-input review 2026-12-04: an infinite end passed as `<= inf`. fit.rope=inf made every
    # contrast "inside the ROPE", a CI pass for any gap; requests_per_minute=inf divided by zero
    # in the rate limiter at the respond stage.
    (["fit.rope=inf"], "fit.rope=inf is not a finite number: give one in [0, inf)"),
    # Checked in the score stage until then, after every answer was bought.
    (["judge.method=foo"], "judge.method=foo is not one of cascade, logprob"),
    (["judge.decoding=jsn"], "judge.decoding=jsn is not one of json, options, first_token, "
                             "letters"),
    (["model=vllm", "model.vllm.schema_format=json"],
     "model.vllm.schema_format=json is not one of json_schema, json_object"),
    (["engine.requests_per_minute=inf"],
     "engine.requests_per_minute=inf is not a finite number: give one in (0, inf)"),
    (["fit.rope=-inf"], "fit.rope=-inf is not a finite number: give one in [0, inf)"),
    # Bad-input review 2026-12-06: no upper bound, so the model run started and numpy then
    # asked for 35.7 TiB.
    (["method=iat", "iat.bootstrap_resamples=99999999999"],
     "iat.bootstrap_resamples=99999999999 must lie in [1, 1000000]"),
    (["method=dif", "dif.permutation_resamples=1000001"],
     "dif.permutation_resamples=1000001 must lie in [1, 1000000]"),
    (["method=counterfactual", "counterfactual.bootstrap_resamples=2000000"],
     "counterfactual.bootstrap_resamples=2000000 must lie in [1, 1000000]"),
    (["model=vllm", "model.vllm.timeout_s=inf"],
     "model.vllm.timeout_s=inf is not a finite number: give one in (0, inf)"),
])
def test_a_value_outside_its_range_is_one_line_naming_key_value_and_range(overrides, message):
    with pytest.raises(ConfigValueError) as raised:
        _compose(overrides)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


@pytest.mark.parametrize("overrides", [
    ["fit.rope=0"], ["fit.familywise_alpha=null"], ["engine.requests_per_minute=null"],
    ["engine.max_failed_share=1"], ["personas.null_count=0"], ["fit.judge_imputations=1000"],
    ["fit.second_outcome=undetermined"], ["engine.backoff_initial_s=0"],
    ["plan.replicates=[1]"], ["plan.persona_multiples=[1,3]"], ["fit.seed=0"],
    ["design.seed=4294967294"],
])
def test_values_at_the_edges_of_their_ranges_and_nulls_are_accepted(overrides):
    _compose(overrides)  # the check must not refuse what the docs allow



# The shared sections' bounds that no case above reaches (mutation review 2026-12-06).
@pytest.mark.parametrize(("overrides", "message"), [
    (["model=vllm", "model.vllm.sampling.top_p=1.5"],
     "model.vllm.sampling.top_p=1.5 must lie in (0, 1]"),
    (["model=vllm", "model.vllm.sampling.max_tokens=0"],
     "model.vllm.sampling.max_tokens=0 must lie in [1, inf)"),
    (["model=vllm", "model.vllm.sampling.repeat_penalty=0"],
     "model.vllm.sampling.repeat_penalty=0.0 must lie in (0, inf)"),
    (["model=vllm", "model.vllm.n_ctx=0"], "model.vllm.n_ctx=0 must lie in [1, inf)"),
    (["model=vllm", "model.vllm.n_threads=0"], "model.vllm.n_threads=0 must lie in [1, inf)"),
    (["judge.rationale_max_chars=-1"], "judge.rationale_max_chars=-1 must lie in [0, inf)"),
    (["judge.min_decision_mass=1.5"], "judge.min_decision_mass=1.5 must lie in [0, 1]"),
    (["judge.rule_check_per_group=-1"], "judge.rule_check_per_group=-1 must lie in [0, inf)"),
    (["items.per_domain=0"], "items.per_domain=0 must lie in [1, inf)"),
    (["personas.null_length=0"], "personas.null_length=0 must lie in [1, inf)"),
    (["design.max_prompts=0"], "design.max_prompts=0 must lie in [1, inf)"),
    (["design.max_tokens_budget=0"], "design.max_tokens_budget=0 must lie in [1, inf)"),
    (["design.futility_from=1.5"], "design.futility_from=1.5 must lie in [0, 1]"),
    (["engine.backoff_max_s=-1"], "engine.backoff_max_s=-1.0 must lie in [0, inf)"),
])
def test_each_shared_sections_bound_refuses_the_value_past_it(overrides, message):
    """Catches a bound dropped or loosened in audit/config.py's shared sections (a lower bound
    moved from 1 to 0, an open end closed, an upper end of a share removed): each such value
    ran until its consumer failed or silently misbehaved (n_ctx=0, max_tokens=0, a decision
    mass or a futility share above 1)."""
    with pytest.raises(ConfigValueError) as raised:
        _compose(overrides)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


@pytest.mark.parametrize("overrides", [
    ["model=vllm", "model.vllm.sampling.temperature=0"],
    ["model=vllm", "model.vllm.sampling.top_p=1"],
    ["judge.rationale_max_chars=0"], ["judge.rule_check_per_group=0"],
    ["judge.min_decision_mass=1"], ["design.futility_from=1"],
])
def test_greedy_sampling_and_the_other_documented_edges_are_accepted(overrides):
    """Catches temperature's closed lower end made open (temperature=0, greedy decoding, the
    usual reproducible setting, refused) and the other documented edges (0 to turn a count
    off, 1 for a share) refused."""
    _compose(overrides)

def _declared(schema: type, prefix: str = ""):
    for config_field in dataclasses.fields(schema):
        if "range" in config_field.metadata or "choices" in config_field.metadata:
            yield f"{prefix}{config_field.name}", config_field
        kind = config_field.type if isinstance(config_field.type, type) else None
        if kind is not None and dataclasses.is_dataclass(kind):
            yield from _declared(kind, f"{prefix}{config_field.name}.")


@pytest.mark.parametrize("schema", [AuditConfig, VerdictConfig])
def test_every_default_lies_within_its_own_declaration(schema):
    """A declared range that refuses its own default would refuse every run."""
    assert list(config_problems(schema())) == []


def test_the_choices_the_config_checks_are_the_ones_the_fit_reads():
    """One list each: a model or coding added to the fit but not the config would be refused."""
    from audit.methods.rasch.irt import engines, probability, rasch

    assert set(OUTCOME_CODINGS) == set(OUTCOMES)
    assert (rasch.MODELS, probability.RESPONSES, engines.ENGINES) == (MODELS, RESPONSES, ENGINES)


def test_only_a_whole_percent_for_a_share_gets_the_share_it_meant():
    share = {"range": Range(0, 1, open_high=True)}
    assert value_problem("design.futility", 1.5, share) == "design.futility=1.5 must lie in [0, 1)"
    assert value_problem("design.futility", 150, share) == "design.futility=150 must lie in [0, 1)"
    assert value_problem("fit.draws", 50, {"range": Range(1)}) is None
    assert value_problem("plan.gap", 200, {"range": Range(0, 100)}) == \
        "plan.gap=200 must lie in [0, 100]"
    # Bad-input review 2026-12-04: an effect size in [0, 1] is no share, so 3 is not "0.03 for
    # 3%"; the judge's rates lie in (0.5, 1], where 2 was told "0.02 for 2%" and [0, 1].
    effect_size = _compose([]).counterfactual.__dataclass_fields__["min_rank_biserial"].metadata
    assert value_problem("counterfactual.min_rank_biserial", 3.0, effect_size) == \
        "counterfactual.min_rank_biserial=3.0 must lie in [0, 1]"
    rate = _compose([]).plan.__dataclass_fields__["sensitivity"].metadata
    assert value_problem("plan.sensitivity", 2.0, rate) == \
        "plan.sensitivity=2.0 must lie in (0.5, 1]"
    assert value_problem("plan.sensitivity", 0.3, rate) == \
        "plan.sensitivity=0.3 must lie in (0.5, 1]"
    assert value_problem("plan.sensitivity", 95, rate) == \
        "plan.sensitivity=95 must lie in (0.5, 1]: a share, so plan.sensitivity=0.95 for 95%"


def test_range_notation_and_membership():
    assert str(Range(0, 1, open_low=True, open_high=True)) == "(0, 1)"
    assert str(Range(1)) == "[1, inf)" and str(Range(0.5, 2)) == "[0.5, 2]"
    assert 0 in Range(0) and -0.01 not in Range(0) and 0 not in Range(0, open_low=True)
    # The open upper end excludes its bound and nothing below it (review2 tests.md finding 7).
    assert 1.0 not in Range(0, 1, open_high=True) and 0.999 in Range(0, 1, open_high=True)
    assert 1.0 in Range(0, 1)
    assert math.nan not in Range(0, 1)
    assert "text" in Range(0, 1)  # not a number: the type check is Hydra's, not this one


def test_the_verdict_rules_use_the_same_check():
    with pytest.raises(ConfigValueError, match=r"alpha=1.5 must lie in \(0, 1\)"):
        check_config(VerdictConfig(alpha=1.5))


def _audit(*overrides: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "audit", "judge=rules_only", "tracking=none", "items=smoke",
         f"paths.output_dir={cwd / 'out'}", f"paths.response_store={cwd / 'store.sqlite3'}",
         *overrides], cwd=cwd, capture_output=True, text=True, timeout=120, env=ENV)


def test_python_m_audit_refuses_a_negative_rope_before_any_prompt(tmp_path: Path):
    """Bug caught: fit.rope=-0.5 ran to the end with exit 0 and a gate turned inside out."""
    result = _audit("fit.rope=-0.5", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "fit.rope=-0.5 must lie in [0, inf)" in errors[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "store.sqlite3").exists() and not (tmp_path / "out").exists()


def test_audit_stages_names_the_params_file_with_the_bad_value(tmp_path: Path):
    from audit.cli.params import compose_params, params_yaml

    text = params_yaml(compose_params([])).replace("  hdi_prob: 0.94", "  hdi_prob: 1.5")
    (tmp_path / "params.yaml").write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "audit.stages", "design", "--params", "params.yaml",
         "--dir", "pipeline"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env=ENV)
    assert result.returncode == 2, result.stderr
    assert "params file params.yaml: fit.hdi_prob=1.5 must lie in (0, 1)" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "pipeline" / "design").exists()


def test_nan_is_refused_for_every_float_setting():
    """Bug caught: `plan.gap=nan` passed the check (plan.gap declares no range) and ended
    audit.plan in scipy's "function value is NaN" traceback, or, in logits, in a plan of a
    "gap of nan logits" with power 0.50, exit 0. NaN is never a setting, ranged or not."""
    config, keys = _compose(["method=rasch"]), []
    floats = [(key, owner, config_field.name) for key, owner, config_field in settings(config)
              if isinstance(getattr(owner, config_field.name), float)]
    for key, owner, name in floats:
        kept = getattr(owner, name)
        setattr(owner, name, math.nan)
        try:
            problems = list(config_problems(config))
        finally:
            setattr(owner, name, kept)
        assert len(problems) == 1 and problems[0].startswith(f"{key}=nan"), (key, problems)
        keys.append(key)
    assert "plan.gap" in keys and "fit.rope" in keys, keys


@pytest.mark.parametrize("url", ["http://user:sk-123@127.0.0.1:8000/v1",
                                 "https://proxy/v1?api_key=sk-123", "https://proxy/v1?token=x",
                                 "https://proxy/v1?KEY=sk-123"])
def test_a_server_url_with_a_credential_is_refused_without_repeating_it(url):
    """Catches a key written into base_url or base_urls reaching MLflow's params, the logs and
    error messages in clear (they log URLs as written), and a refusal that repeats it."""
    from audit.config import ModelConfig

    for model in (ModelConfig(backend="openai_compatible", base_url=url),
                  ModelConfig(backend="openai_compatible", base_urls=["http://a/v1", url])):
        problems = list(config_problems(model, "model.m."))
        assert len(problems) == 1 and "sk-123" not in problems[0]
        assert problems[0].startswith("model.m.base_url")
        assert problems[0].endswith("name the environment variable that holds the key in "
                                    "api_key_env")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "http://user@host/v1",
                                 "https://proxy/v1?max_tokens=5&tokenizer=x&keys=2",
                                 "http://[::1/v1"])
def test_a_server_url_without_a_credential_passes(url):
    """Catches a refusal of ordinary URLs: a user name alone, parameters whose names only
    contain 'token', and a malformed URL, which its backend names."""
    from audit.config import ModelConfig

    assert list(config_problems(ModelConfig(base_url=url, base_urls=[url]), "m.")) == []


def test_range_edges_a_bool_and_infinity():
    """Catches a bool checked as the number it is (the type check is Hydra's), infinity let
    into a range whose end is infinite, a -inf lower end written closed, and a whole float
    bound written as 1.0."""
    assert True in Range(2, 3)
    assert math.inf not in Range(0) and -math.inf not in Range()
    assert str(Range(high=5)) == "(-inf, 5]" and str(Range(1.0, 2.5)) == "[1, 2.5]"


def test_a_list_settings_message_names_its_first_value_outside_and_refuses_infinity():
    """Catches the message naming another entry than the first outside, and an infinite entry
    let into a list whose range has no upper end."""
    each = {"each_range": Range(1)}
    assert value_problem("plan.sizes", [0, 5, -1], each) == \
        "plan.sizes=[0, 5, -1]: 0 must lie in [1, inf)"
    assert value_problem("plan.sizes", [5, math.inf], each) == \
        "plan.sizes=[5, inf]: inf must lie in [1, inf)"


def test_a_blank_text_of_spaces_is_empty_and_the_message_names_the_fix():
    """Catches a text of spaces taken for a value, and the fix left out of the message."""
    fix = {"blank_fix": "name the judge model or leave the key out"}
    assert value_problem("judge.model", "  ", fix) == \
        "judge.model is empty: name the judge model or leave the key out"


def test_the_percent_hint_edges():
    """Catches the hint's bounds moved: 1 is no percent (1%, 0.01, lies in [0, 1) yet 1 is the
    likelier slip), 100 is 100% (1 for a range closed at 1), a range below 0 is no share (50
    is not 0.5 for a correlation), and a tuple range counts as a share unless told."""
    share = {"range": Range(0, 1, open_high=True)}
    assert value_problem("design.futility", 1, share) == "design.futility=1 must lie in [0, 1)"
    rate = {"range": Range(0.5, 1, open_low=True)}
    assert value_problem("plan.sensitivity", 100, rate) == \
        "plan.sensitivity=100 must lie in (0.5, 1]: a share, so plan.sensitivity=1 for 100%"
    assert value_problem("r", 50, {"range": Range(-1, 1)}) == "r=50 must lie in [-1, 1]"
    assert value_problem("p", 94, {"range": (0, 1)}) == \
        "p=94 must lie in [0, 1]: a share, so p=0.94 for 94%"


def test_check_config_names_the_key_under_its_prefix_and_raises_the_error_asked_for():
    """Catches the prefix dropped from the refusal's key and the caller's error class ignored
    (a verdict or fit entry point catches its own)."""
    from audit.errors import AuditError

    class RulesError(AuditError):
        pass

    with pytest.raises(RulesError, match=r"^verdict\.alpha=1.5 must lie in \(0, 1\)$"):
        check_config(VerdictConfig(alpha=1.5), "verdict.", error=RulesError)
