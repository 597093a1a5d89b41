"""The composed configs: the shared sections (audit.config) plus every registered method's own.

AuditConfig is SharedConfig with each method's SECTIONS (methods/NAME/config.py) added, and
VerdictConfig is SharedVerdictRules with each method's VERDICT_RULES: built here, next to the
registry, so that audit.config, a foundation module, imports no method. A plug-in installed under
the `audit.methods` entry-point group (audit.methods.registered_methods) adds its sections the same
way, without an edit to this project.

`dvc_params` is the one section that carries no setting of its own: conf/pipeline.yaml fills it,
per DVC stage, with the running method's DVC_PARAMS (the settings of its own each stage reads),
through the `audit_dvc_params` resolver, so dvc.yaml lists `dvc_params.STAGE` and names no method.
DVC composes params.yaml with this project's Hydra plugin loaded (.dvc/config), which registers
the resolver, so `dvc exp run -S` fills it as `python -m audit.params` does.
"""

from __future__ import annotations

from dataclasses import field, fields, make_dataclass, replace
from types import ModuleType
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import Container, DictConfig, OmegaConf

from audit.config import SharedConfig, SharedVerdictRules
from audit.config_ranges import check_config
from audit.methods import method_module, registered_methods

DVC_PARAMS_RESOLVER = "audit_dvc_params"
ANSWERS_FILE_RESOLVER = "audit_answers_file"
# dvc.yaml's stages (audit.methods.layout.STAGE_NAMES), each with its dvc_params entry.
DVC_STAGES = ("design", "respond", "score", "analyse", "report")
_ABSENT = object()


def _method_configs() -> list[ModuleType]:
    return [method_module(name, "config") for name in registered_methods()]


def _method_sections(taken: set[str]) -> list[tuple[str, type, Any]]:
    """Every registered method's config sections, in registry order; a key two methods claim (or
    a shared one) is a programming error."""
    sections: list[tuple[str, type, Any]] = []
    for module in _method_configs():
        for key, schema in module.SECTIONS.items():
            if key in taken:
                raise TypeError(f"config section '{key}' of {module.__name__} is already taken")
            taken.add(key)
            sections.append((key, schema, field(default_factory=schema)))
    return sections


def _verdict_bases() -> tuple[type, ...]:
    rules = [module.VERDICT_RULES for module in _method_configs()]
    keys = [rule_field.name for rule in [SharedVerdictRules, *rules] for rule_field in fields(rule)]
    if len(keys) != len(set(keys)):
        raise TypeError(f"two methods declare the same verdict rule key: {sorted(keys)}")
    # Reversed, because a dataclass collects its bases' fields from the end of the MRO: alpha first.
    return (*reversed(rules), SharedVerdictRules)


# The composed config: the shared sections, then each registered method's (cfg.fit, cfg.iat, ...),
# then dvc_params (filled only in the pipeline's config; not a section any run logs).
AuditConfig = make_dataclass(
    "AuditConfig",
    [*_method_sections({f.name for f in fields(SharedConfig)} | {"dvc_params"}),
     ("dvc_params", dict[str, Any], field(default_factory=dict))],
    bases=(SharedConfig,))
AuditConfig.__module__ = __name__  # so pickles (joblib and submitit launchers) find it here
AuditConfig.__doc__ = ("The whole audit config: SharedConfig's sections plus every registered "
                       "method's own (audit.methods.registered_methods, methods/NAME/config.py "
                       "SECTIONS).")

# The rules of `python -m audit.verdict`: alpha plus every method's VERDICT_RULES, one flat set of
# keys so each stays a plain `key=value` override.
VerdictConfig = make_dataclass("VerdictConfig", [], bases=_verdict_bases())
VerdictConfig.__module__ = __name__
VerdictConfig.__doc__ = ("The rules `python -m audit.verdict` applies to a finished run: "
                         "SharedVerdictRules plus each method's VERDICT_RULES.")


def dvc_stage_params(stage: str, *, _root_: DictConfig) -> DictConfig:
    """The running method's name and the settings of its own that DVC stage `stage` reads (its
    config's DVC_PARAMS[stage], dotted keys, or a function of the composed config giving them),
    nested as in the config. A DictConfig, not a dict:
    DVC resolves the composed config in place (OmegaConf.resolve), which takes no plain dict."""
    method = _root_.method
    chosen: dict[str, Any] = {"method": method}
    keys = method_module(method, "config").DVC_PARAMS.get(stage, ())
    for key in keys(_root_) if callable(keys) else keys:
        value = OmegaConf.select(_root_, key, default=_ABSENT, throw_on_missing=True)
        if value is _ABSENT:  # a typo in the method's package, not in the user's config
            raise TypeError(f"DVC_PARAMS of method '{method}' names '{key}', which its config "
                            f"lacks")
        if isinstance(value, Container):
            value = OmegaConf.to_container(value, resolve=True)
        *parents, leaf = key.split(".")
        node = chosen
        for parent in parents:
            node = node.setdefault(parent, {})
        node[leaf] = value
    return OmegaConf.create(chosen)


def answers_file(*, _root_: DictConfig) -> str:
    """The file dvc.yaml's first stages depend on for their answers: `ingest.input` when the
    answers are imported (python -m audit.ingest), so a changed file reruns them; else the item
    bank, which they depend on anyway (DVC takes no empty or optional dependency)."""
    # Selected by path: `_root_.items` would be the DictConfig method of that name.
    return (OmegaConf.select(_root_, "ingest.input", default=None)
            or str(OmegaConf.select(_root_, "items.bank")))


def with_dvc_params(cfg: AuditConfig) -> AuditConfig:
    """`cfg` with dvc_params filled for its method, as conf/pipeline.yaml fills them: for a
    params.yaml written from a config composed without them (a past run's config.yaml)."""
    root = OmegaConf.structured(cfg)
    return replace(cfg, dvc_params={
        **{stage: OmegaConf.to_container(dvc_stage_params(stage, _root_=root))
           for stage in DVC_STAGES},
        "answers_file": answers_file(_root_=root)})


def register_resolver() -> None:
    """The resolvers conf/pipeline.yaml fills dvc_params with."""
    if not OmegaConf.has_resolver(DVC_PARAMS_RESOLVER):
        OmegaConf.register_new_resolver(DVC_PARAMS_RESOLVER, dvc_stage_params)
    if not OmegaConf.has_resolver(ANSWERS_FILE_RESOLVER):
        OmegaConf.register_new_resolver(ANSWERS_FILE_RESOLVER, answers_file)


def register_configs() -> None:
    """Register the schema so that `conf/config.yaml` can name it first in its defaults list, and
    the dvc_params resolver."""
    ConfigStore.instance().store(name="audit_schema", node=AuditConfig)
    register_resolver()


def to_audit_config(cfg: DictConfig | dict[str, Any]) -> AuditConfig:
    """Validate any mapping (a composed Hydra config or params.yaml) against the schema: the
    keys and types (OmegaConf), then every section's values against their fields' declared
    ranges and choices (audit.config_ranges.check_config: ConfigValueError, one line, exit 2),
    so a nonsense setting stops every entry point before any prompt is sent."""
    register_resolver()  # the pipeline config's dvc_params resolve through the resolver
    schema = OmegaConf.structured(AuditConfig)
    source = cfg if isinstance(cfg, DictConfig) else OmegaConf.create(cfg)
    plain = OmegaConf.to_container(source, resolve=True, throw_on_missing=True)
    if isinstance(plain, dict):
        plain.pop("hydra", None)
    merged = OmegaConf.merge(schema, plain)
    audit_cfg = OmegaConf.to_object(merged)
    check_config(audit_cfg)
    return audit_cfg  # type: ignore[return-value]
