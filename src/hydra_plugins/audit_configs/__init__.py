"""Audit's Hydra plugin: the config schema, and a user's own ./conf in front of the shipped one.

A Hydra plugin module is imported by every Hydra process, which includes DVC's `dvc exp run` when
`.dvc/config` enables Hydra composition, so the structured schema (`audit_schema`, first in
config.yaml's defaults) is registered there too.

The default configs ship inside the package (audit/conf), so an installed wheel composes without a
checkout. A user adds or replaces a config by writing one YAML file under ./conf in the folder
they run from (`conf/model/my_model.yaml`), without editing the installed package: that folder
goes in front of the shipped one in Hydra's search path, so a file there wins over a shipped file
of the same name and adds new options to each group.

That folder is read by UserConfSource, Hydra's file reading with one check: a chosen file that
holds no settings (empty, or only comments) is refused while it loads. audit's own commands
check that after composing, with a line that knows how the file was chosen
(audit.config_files.check_chosen_files_hold_settings); DVC's `dvc exp run -S items=mine` composes
params.yaml in its own process, where no audit command runs, and an empty conf/items/mine.yaml
gave the shipped item bank without a word (noticed 2026-12-05).
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.core.object_type import ObjectType
from hydra.plugins.config_source import ConfigLoadError, ConfigResult, ConfigSource
from hydra.plugins.search_path_plugin import SearchPathPlugin
from omegaconf import OmegaConf

from audit.config import CONF_DIR
from audit.config_files import (USER_SCHEME, chosen_files_checked_after_composing,
                                empty_file_problem)
from audit.config_ranges import ConfigValueError

from audit.methods.configs import register_configs

register_configs()

USER_CONF = "conf"  # relative to the working directory


def user_conf_dir(cwd: Path | None = None) -> Path | None:
    """The user's ./conf, unless there is none or it is the shipped folder itself."""
    folder = (cwd or Path.cwd()) / USER_CONF
    if not folder.is_dir() or folder.resolve() == Path(CONF_DIR).resolve():
        return None
    return folder.resolve()


class UserConfSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        shipped = [element for element in search_path.get_path()
                   if element.path and Path(element.path.removeprefix("file://")).resolve()
                   == Path(CONF_DIR).resolve()]
        folder = user_conf_dir()
        if not shipped or folder is None:  # another Hydra app, or no ./conf: leave it alone
            return
        search_path.prepend("audit-user", f"{USER_SCHEME}://{folder}",
                            anchor=SearchPathQuery(provider=shipped[0].provider))


class UserConfSource(ConfigSource):
    """The user's ./conf, read as Hydra's file source reads a folder (hydra._internal's
    FileConfigSource, private, so written out here against the public ConfigSource), except that
    a file holding no settings is refused as it loads unless an audit command composes."""

    def __init__(self, provider: str, path: str) -> None:
        if "://" not in path:
            path = f"{self.scheme()}://{path}"
        super().__init__(provider=provider, path=path)

    @staticmethod
    def scheme() -> str:
        return USER_SCHEME

    def _full_path(self, config_path: str) -> str:
        return os.path.realpath(os.path.join(self.path, config_path))

    def load_config(self, config_path: str) -> ConfigResult:
        name = self._normalize_file_name(config_path)
        full_path = self._full_path(name)
        if not os.path.exists(full_path):
            raise ConfigLoadError(f"Config not found : {full_path}")
        with open(full_path, encoding="utf-8") as handle:
            header = ConfigSource._get_header_dict(handle.read(512))
            handle.seek(0)
            config = OmegaConf.load(handle)  # a file, not its text: YAML errors name the file
            handle.seek(0)
            empty = not config and yaml.safe_load(handle) is None  # `{}` is a choice made
        if empty and not chosen_files_checked_after_composing():
            group, _, file_name = name.rpartition("/")
            raise ConfigValueError(empty_file_problem(
                f"{USER_CONF}/{name}", group, file_name.removesuffix(".yaml"),
                replaces_shipped=(Path(CONF_DIR) / name).is_file()))
        return ConfigResult(config=config, path=f"{self.scheme()}://{self.path}",
                            provider=self.provider, header=header)

    def available(self) -> bool:
        return self.is_group("")

    def is_group(self, config_path: str) -> bool:
        return os.path.isdir(self._full_path(config_path))

    def is_config(self, config_path: str) -> bool:
        return os.path.isfile(self._full_path(self._normalize_file_name(config_path)))

    def list(self, config_path: str, results_filter: ObjectType | None) -> list[str]:
        files: list[str] = []
        for file_name in os.listdir(self._full_path(config_path)):
            self._list_add_result(files=files, file_path=os.path.join(config_path, file_name),
                                  file_name=file_name, results_filter=results_filter)
        return sorted(set(files))
