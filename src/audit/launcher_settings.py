"""A sweep launcher's settings, checked before the sweep starts.

The joblib launcher hands its settings to joblib.Parallel only once it launches the jobs, after
the sweep's parent MLflow run was made: `hydra.launcher.n_jobs=0` (or a mistyped `prefer`) ended
the sweep with joblib's 30-line traceback and a FAILED parent run. Each setting is tried here
alone, through joblib's public API, so the line names the one at fault. The submitit launchers
check their settings when they submit, against a cluster this cannot see, and are not checked.
"""

from __future__ import annotations

from typing import Any

from omegaconf import DictConfig, OmegaConf

JOBLIB_LAUNCHER = "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher"
# The launcher sets the backend itself (loky: threads cannot run Hydra jobs) and reads these
# three as integers when it can (hydra_joblib_launcher._core.process_joblib_cfg).
_FORCED = {"_target_", "backend"}
_INTEGER_WHEN_POSSIBLE = {"pre_dispatch", "batch_size", "max_nbytes"}
_HINTS = {"n_jobs": "the number of jobs run at once (2; -1 for one per CPU)",
          "prefer": "processes or threads", "require": "sharedmem or null",
          "batch_size": "auto or a positive integer"}


def _as_launched(key: str, value: Any) -> Any:
    if key in _INTEGER_WHEN_POSSIBLE and value:
        try:
            return int(value)
        except (TypeError, ValueError):
            return value
    return value


def launcher_problem(launcher: DictConfig | None) -> str | None:
    """One line naming the `hydra.launcher` setting that the joblib launcher would refuse and what
    it takes; None when every setting is accepted or the launcher is another."""
    if launcher is None or str(launcher.get("_target_", "")) != JOBLIB_LAUNCHER:
        return None
    import joblib

    settings = OmegaConf.to_container(launcher, resolve=True)
    for key, value in sorted(settings.items()):
        if key in _FORCED:
            continue
        try:
            joblib.Parallel(**{key: _as_launched(key, value)})
            if key == "n_jobs":  # 0 passes the constructor and fails at launch
                joblib.effective_n_jobs(value)
        except (TypeError, ValueError) as error:
            hint = _HINTS.get(key, "see joblib.Parallel's documentation")
            return (f"hydra.launcher.{key}={value} is refused by joblib ({error}); it takes "
                    f"{hint}: set it again, or leave the override out for its default")
    return None
