"""How the composed configs are built from the registered methods (audit.methods.configs): the
sections and verdict rules each method adds, and the dvc_params of a DVC stage."""

from __future__ import annotations

from dataclasses import dataclass, fields
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import MissingMandatoryValue

from audit.cli.params import compose_params
from audit.methods import configs
from audit.methods.configs import AuditConfig, VerdictConfig, dvc_stage_params, to_audit_config


@dataclass
class _Section:
    size: int = 1


def _method(name: str, sections: dict, rules: type | None = None) -> SimpleNamespace:
    return SimpleNamespace(__name__=name, SECTIONS=sections, VERDICT_RULES=rules)


def test_a_config_section_two_methods_claim_is_refused(monkeypatch):
    """Mutation review 2026-12-06: the second method to claim a section is named; so is a
    method claiming a shared section."""
    monkeypatch.setattr(configs, "_method_configs", lambda: [
        _method("first", {"extra": _Section}), _method("second", {"extra": _Section})])
    with pytest.raises(TypeError, match="config section 'extra' of second is already taken"):
        configs._method_sections(set())
    monkeypatch.setattr(configs, "_method_configs", lambda: [_method("m", {"paths": _Section})])
    with pytest.raises(TypeError, match="config section 'paths' of m is already taken"):
        configs._method_sections({"paths"})


def test_two_methods_declaring_one_verdict_rule_key_are_refused(monkeypatch):
    """Mutation review 2026-12-06: one flat set of `key=value` rules cannot hold a key twice."""
    @dataclass
    class Rules:
        shared_gap: float = 0.1

    monkeypatch.setattr(configs, "_method_configs", lambda: [
        _method("first", {}, Rules), _method("second", {}, Rules)])
    with pytest.raises(TypeError, match="two methods declare the same verdict rule key"):
        configs._verdict_bases()


def test_the_verdict_rules_are_alpha_then_each_methods_in_registry_order():
    """Mutation review 2026-12-06: alpha first, then rasch's, iat's, dif's and counterfactual's
    rules, as the methods are registered."""
    assert [rule.name for rule in fields(VerdictConfig)] == [
        "alpha", "rasch_fail_on_undecided", "rasch_require_converged", "iat_min_abs_d",
        "iat_min_parse_rate", "dif_min_accuracy_gap", "dif_min_score_gap",
        "dif_beyond_null_personas", "min_rank_biserial"]


def test_a_dvc_param_the_config_lacks_names_the_method_and_the_key(monkeypatch):
    """Mutation review 2026-12-06: a DVC_PARAMS key the config lacks is the method package's
    error, named as such."""
    monkeypatch.setattr(configs, "method_module", lambda method, part: SimpleNamespace(
        DVC_PARAMS={"design": ("iat.no_such_setting",)}))
    root = OmegaConf.structured(AuditConfig(method="iat"))
    with pytest.raises(TypeError, match="DVC_PARAMS of method 'iat' names "
                                        "'iat.no_such_setting', which its config lacks"):
        dvc_stage_params("design", _root_=root)


def test_a_stages_section_holds_its_settings_resolved():
    """Mutation review 2026-12-06: a section given whole (iat, for design) carries the values
    its interpolations name, not the interpolations, which the stage's own node cannot
    resolve."""
    root = OmegaConf.merge(OmegaConf.structured(AuditConfig(method="iat")),
                           {"dif": {"max_tokens": 77}, "iat": {"max_tokens": "${dif.max_tokens}"}})
    design = OmegaConf.to_container(dvc_stage_params("design", _root_=root), resolve=True)
    assert design["method"] == "iat" and design["iat"]["max_tokens"] == 77


def test_a_dvc_param_left_missing_is_the_users_missing_value_not_the_methods_error():
    """Mutation review 2026-12-06: a setting the config has but leaves `???` is reported as a
    missing value, not as a key the method's DVC_PARAMS names wrongly."""
    root = OmegaConf.structured(AuditConfig(method="iat"))
    root.iat.max_tokens = "???"
    with pytest.raises(MissingMandatoryValue, match="iat.max_tokens"):
        dvc_stage_params("respond", _root_=root)


def test_a_config_composed_with_hydras_own_settings_validates_without_them():
    """Mutation review 2026-12-06: a Hydra config composed with return_hydra_config carries a
    `hydra` node, which is no section of the schema and is dropped."""
    plain = OmegaConf.to_container(OmegaConf.structured(compose_params(["method=iat"])))
    cfg = to_audit_config({**plain, "hydra": {"job": {"name": "x"}}})
    assert cfg.method == "iat" and not hasattr(cfg, "hydra")


def test_a_setting_left_missing_in_a_config_file_is_refused_not_defaulted():
    """Mutation review 2026-12-06: `???` written over a setting that has a default is a missing
    value, not the schema's default taken in silence."""
    plain = OmegaConf.to_container(OmegaConf.structured(compose_params(["method=iat"])))
    plain["iat"]["max_tokens"] = "???"
    with pytest.raises(MissingMandatoryValue, match="iat.max_tokens"):
        to_audit_config(plain)
