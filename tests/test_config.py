"""Every config option composes and validates; params.yaml is exactly the default composition."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from audit.errors import AuditError
from audit.__main__ import CONF_DIR
from audit.methods.configs import AuditConfig, register_configs, to_audit_config
from audit.cli.params import compose_params, params_yaml
from audit.items import select_items

register_configs()
PROJECT_ROOT = Path(__file__).resolve().parents[1]
GROUPS = ["method", "model", "judge", "items", "personas", "fit", "tracking", "paths"]


def _options(group: str) -> list[str]:
    return sorted(path.stem for path in (Path(CONF_DIR) / group).glob("*.yaml"))


def _compose(overrides: list[str]) -> AuditConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("config", overrides=["paths.output_dir=out", *overrides])
    return to_audit_config(composed)


@pytest.mark.parametrize(("group", "option"),
                         [(group, option) for group in GROUPS for option in _options(group)])
def test_every_option_composes(group: str, option: str):
    cfg = _compose([f"{group}={option}"])
    assert isinstance(cfg, AuditConfig)


@pytest.mark.parametrize("sweep", _options("sweep"))
def test_every_sweep_preset_composes(sweep: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("config", overrides=[f"+sweep={sweep}"], return_hydra_config=True)
    assert composed.hydra.sweeper.params


def test_default_config_has_the_required_groups():
    cfg = _compose([])
    assert list(cfg.model) == ["qwen_coder_0_5b"]
    assert cfg.model["qwen_coder_0_5b"].model == "qwen2.5-coder-0.5b-instruct"
    assert cfg.judge.name == "qwen_coder_1_5b" and cfg.judge.decoding == "letters"
    assert cfg.fit.model == "population" and cfg.fit.outcome == "favourable"
    assert cfg.fit.familywise_alpha == 0.05 and cfg.personas.null_count == 4
    assert cfg.tracking.tracking_uri == "sqlite:///mlflow.db"
    assert {"model", "judge", "items", "personas", "fit", "tracking", "sweep"} <= {
        path.name for path in Path(CONF_DIR).iterdir() if path.is_dir()}


def test_several_models_at_once():
    cfg = _compose(["model=[smollm2,smollm2_greedy]"])
    assert sorted(cfg.model) == ["smollm2", "smollm2_greedy"]
    assert cfg.model["smollm2_greedy"].sampling.temperature == 0.0


def test_a_typo_in_an_override_is_an_error():
    with pytest.raises(ConfigCompositionException):
        _compose(["design.replicate=3"])
    with pytest.raises(ConfigCompositionException):
        _compose(["model=does_not_exist"])


def test_a_wrong_type_is_an_error():
    with pytest.raises(Exception, match="replicates"):
        _compose(["design.replicates=many"])


def test_params_yaml_is_the_default_composition(monkeypatch):
    # The default store reads MLFLOW_TRACKING_URI: a developer's server is not the default.
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    committed = OmegaConf.load(PROJECT_ROOT / "params.yaml")
    assert to_audit_config(committed) == compose_params([])
    assert (PROJECT_ROOT / "params.yaml").read_text() == params_yaml(compose_params([]))


@pytest.mark.parametrize("judge", _options("judge"))
def test_judge_eval_composes_with_every_judge(judge: str):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        composed = compose("judge_eval", overrides=["paths.output_dir=out", f"judge={judge}"])
    cfg = to_audit_config(composed)
    assert cfg.judge.name == judge and cfg.tracking.experiment == "judge_eval"
    assert cfg.judge.method in ("cascade", "logprob")


def test_a_panel_lists_several_judges():
    cfg = _compose(["judge=smollm2_panel"])
    assert len(cfg.judge.models) == 3 and cfg.judge.rationale_max_chars == 0


def test_every_method_option_is_registered():
    from audit.methods import METHODS, create_method

    assert set(_options("method")) <= set(METHODS)
    for option in _options("method"):
        assert _compose([f"method={option}"]).method == option
    with pytest.raises(AuditError, match="unknown method 'nope'"):
        create_method("nope")


def test_the_default_rasch_design_asks_its_items_once_and_an_override_reaches_it():
    """One answer each keeps the default audit within 15 minutes (conf/method/rasch.yaml); the
    method file sets it, so a command-line override must still win over the method file."""
    cfg = _compose([])
    bank = pl.read_csv(PROJECT_ROOT / cfg.items.bank)
    assert select_items(bank, cfg.items).height == len(cfg.items.item_ids) == 12
    assert cfg.design.replicates == 1
    assert _compose(["design.replicates=2"]).design.replicates == 2

