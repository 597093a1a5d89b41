"""A run's name and tags outside Hydra (audit.methods.run_identity): the overrides a `dvc repro`
stage was composed from, the models in order, and where the run wrote its files."""

from __future__ import annotations

from pathlib import Path

from audit.config import ModelConfig, PathsConfig, TrackingConfig
from audit.methods.configs import AuditConfig
from audit.methods.run_identity import (
    composed_from,
    pipeline_overrides,
    pipeline_tags,
    run_name,
    run_tags,
)


def _models() -> dict[str, ModelConfig]:
    return {"zeta": ModelConfig(backend="fake", model="z"),
            "alpha": ModelConfig(backend="fake", model="a")}


def test_unknown_overrides_tag_nothing_and_none_are_tagged_as_none():
    """Mutation review 2026-12-06: a params.yaml without params.overrides (None) adds no tag;
    one composed from no override says `(none)`; neither outlives its stage."""
    with composed_from(None):
        assert pipeline_overrides() is None and pipeline_tags() == {}
    with composed_from([]):
        assert pipeline_tags() == {"hydra.overrides": "(none)"}
    with composed_from(["items=smoke", "fit=hurdle"]):
        assert pipeline_tags() == {"hydra.overrides": "items=smoke fit=hurdle"}
    assert pipeline_overrides() is None


def test_a_stage_run_is_named_by_its_sorted_models_or_by_the_name_the_user_gave():
    """Mutation review 2026-12-06: the models sorted, joined by `+`, then the overrides; a
    tracking.run_name the user gave is the whole name."""
    with composed_from(["items=smoke"]):
        assert run_name(AuditConfig(method="iat", model=_models())) == "iat alpha+zeta items=smoke"
        named = AuditConfig(method="iat", model=_models(),
                            tracking=TrackingConfig(run_name="mine"))
        assert run_name(named) == "mine"


def test_run_tags_name_sorted_models_the_absolute_output_dir_and_keep_extra_tags_last(
        tmp_path: Path, monkeypatch):
    """Mutation review 2026-12-06: `models` sorted; `paths.output_dir` the absolute folder even
    when configured relative; a stage's overrides tagged; an extra tag wins over the rest."""
    monkeypatch.chdir(tmp_path)
    cfg = AuditConfig(method="iat", model=_models(),
                      paths=PathsConfig(root_dir=str(tmp_path), output_dir="out"))
    with composed_from(["items=smoke"]):
        tags = run_tags(cfg, {})
        extra = run_tags(cfg, {}, extra={"method": "m2", "hydra.overrides": "given"})
    assert tags["models"] == "alpha,zeta" and tags["method"] == "iat"
    assert tags["paths.output_dir"] == str(tmp_path.resolve() / "out")
    assert tags["hydra.overrides"] == "items=smoke"
    assert tags["headline_metrics"] == "iat/n_scored,iat/parse_rate,iat/*/mean_d"
    assert (extra["method"], extra["hydra.overrides"]) == ("m2", "given")
