"""One line for a mistake about a named entry: a model under `model`, a judge's model under
`judge.models` (mappings of names to settings, so OmegaConf's own lines read as if the name,
not the setting, were wrong). A setting of an entry the run did not compose, an entry added key
by key on the command line, a file whose settings sit where entries by name belong.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from omegaconf.errors import OmegaConfBaseException

from audit.config_keys import entry_schema
from audit.errors import did_you_mean
from hydra_plugins.audit_configs import user_conf_dir

# What Hydra's composition error says about a value that does not fit the schema.
_FULL_KEY = re.compile(r"full_key: (?P<key>[\w.]+)")
SOURCE = re.compile(r"In '(?P<source>[^']+)'")
_MERGED_OVERRIDE = re.compile(r"Error merging override (?P<override>\S+)")


def config_folders(conf_dir: Path) -> list[Path]:
    """Where Hydra reads config files from: the user's ./conf, then the shipped folder."""
    return [*filter(None, [user_conf_dir()]), Path(conf_dir)]


def flat_entry(text: str) -> str | None:
    """A file that sets an entry's settings (`backend: ...`) directly where named entries belong
    (a model file written flat, not nested under the model's name): one line showing the shape
    that works; None for any other error."""
    key, source = _FULL_KEY.search(text), SOURCE.search(text)
    if key is None or "." not in key["key"]:
        return None
    *parent, setting = key["key"].split(".")
    entry = entry_schema(parent)
    if entry is None or setting not in {field.name for field in dataclasses.fields(entry)}:
        return None
    where = config_file(source["source"]) if source else "a config file"
    name = source["source"].rsplit("/", 1)[-1] if source else "NAME"
    if parent == ["model"]:
        return (f"{where} sets '{setting}' at the top of the file, but a model file nests its "
                f"settings under the model's name: make the first line `{name}:` and indent "
                f"every setting under it (`{name}:` / `  backend: openai_compatible` / "
                f"`  model: ...`), as src/audit/conf/model/vllm.yaml does")
    return (f"{where} sets '{setting}' directly under '{'.'.join(parent)}', which holds "
            f"{entry.__name__} entries by name: put the settings under a name "
            f"(`{parent[-1]}:` / `  NAME:` / `    {setting}: ...`)")


def config_file(source: str) -> str:
    """The file of a config Hydra names by its path in the search path (`model/typo`), as the
    user's folder holds it."""
    return f"conf/{source}.yaml"


def _model_file_exists(name: str, conf_dir: Path) -> bool:
    """Whether `model=NAME` would find a file, in the user's ./conf or the shipped one."""
    return any((folder / "model" / f"{name}.yaml").is_file()
               for folder in config_folders(conf_dir))


def unknown_entry(parent: list[str], name: str, cause: OmegaConfBaseException, conf_dir: Path,
                  where: str) -> str | None:
    """A setting of a named entry (`model.vllm.base_url=...`) that this run did not compose:
    the entries it has and, for a model with a file in conf/model/, how to add it. OmegaConf's
    own line ("Key 'vllm' is not in struct") read as if `vllm` were no model at all."""
    entries = getattr(cause, "parent_node", None)
    if entry_schema(parent) is None or entries is None:
        return None
    present = [str(entry) for entry in entries.keys()]
    dotted = ".".join(parent)
    line = (f"unknown key '{dotted}.{name}'{where}: this run's {dotted} has "
            f"{', '.join(present) or 'no entries'}")
    if parent == ["model"]:
        if _model_file_exists(name, conf_dir):
            return (f"{line}; to audit {name}, choose it first: model={name} (or "
                    f"model=[{','.join([*present, name])}] beside them), then set its keys")
        return (f"{line}; no conf/model/{name}.yaml to choose it from (write one: "
                f"docs/models.md){did_you_mean(name, present)}")
    return f"{line}{did_you_mean(name, present)}"


def entry_added_by_keys(error: BaseException, cause: BaseException | None,
                        conf_dir: Path) -> str | None:
    """`+model.extra.backend=ollama`: a new named entry cannot be built one key at a time
    (OmegaConf makes `extra` an empty mapping, which the entry's schema refuses). It read
    "invalid value for 'extra': Invalid type assigned: dict is not a subclass of ModelConfig"."""
    merged = _MERGED_OVERRIDE.match(str(error))
    if merged is None or "is not a subclass of" not in str(cause):
        return None
    path = merged["override"].lstrip("+~").partition("=")[0].split(".")
    found = next(((path[:size], path[size]) for size in range(1, len(path))
                  if entry_schema(path[:size]) is not None), None)
    if found is None:
        return None
    parent, name = found
    if str(getattr(cause, "full_key", "")) != name:
        # A value of the wrong type inside an entry the run has (`model.NAME.sampling=3`): the
        # error's key is the setting's, and OmegaConf's own line says what is wrong.
        return None
    line = (f"'{merged['override']}' cannot add {'.'.join(parent)} '{name}' from the command "
            "line")
    if parent == ["model"]:
        if _model_file_exists(name, conf_dir):
            return (f"{line}: choose it with model={name} (model=[CURRENT,{name}] keeps the "
                    f"others), then set its keys without the +")
        return (f"{line}: write conf/model/{name}.yaml (docs/models.md) and choose it with "
                f"model={name}")
    return (f"{line}: a judge's models are written under `models:` in conf/judge/NAME.yaml "
            f"(docs/judge.md) and chosen with judge=NAME")
