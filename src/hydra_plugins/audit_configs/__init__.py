"""Audit's Hydra plugin: the config schema, and a user's own ./conf in front of the shipped one.

A Hydra plugin module is imported by every Hydra process, which includes DVC's `dvc exp run` when
`.dvc/config` enables Hydra composition, so the structured schema (`audit_schema`, first in
config.yaml's defaults) is registered there too.

The default configs ship inside the package (audit/conf), so an installed wheel composes without a
checkout. A user adds or replaces a config by writing one YAML file under ./conf in the folder
they run from (`conf/model/my_model.yaml`), without editing the installed package: that folder
goes in front of the shipped one in Hydra's search path, so a file there wins over a shipped file
of the same name and adds new options to each group.
"""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
from hydra.plugins.search_path_plugin import SearchPathPlugin

from audit.config import CONF_DIR

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
        search_path.prepend("audit-user", f"file://{folder}",
                            anchor=SearchPathQuery(provider=shipped[0].provider))
