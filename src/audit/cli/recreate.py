"""How to re-create a logged run, from its MLflow record: the commit of the code, then the
command (`dvc repro` from the run's params.yaml, a sweep's command, a comparison's
`audit.compare` command). `python -m audit.runs show` prints these steps."""

from __future__ import annotations

import re
from typing import Any

from audit.config import TrackingConfig
from audit.tracking.sweeps import shell_word

RUN_ID = re.compile(r"[0-9a-fA-F]{1,32}")  # an MLflow run id or its prefix


def reproduction_steps(run: dict[str, Any], tracking_uri: str = TrackingConfig.tracking_uri
                       ) -> list[str]:
    """What re-creates this run, for any method: dvc.yaml's stages dispatch on `method`, which the
    params.yaml written from the run's config.yaml carries (a test follows these steps for one
    run of each method and compares the tables). A sweep's parent run is re-created by its sweep
    command and a comparison by its audit.compare command: neither has a config.yaml."""
    tags = run["tags"]
    method = tags.get("method", "rasch")
    source, dirty = source_steps(tags)
    if tags.get("audit.role") == "sweep":
        steps = [*source, *sweep_steps(run, tracking_uri)]
    elif method == "compare":
        steps = [*source, *compare_steps(run, tracking_uri)]
    else:
        steps = [*source,
                 f"python -m audit.runs params {run['run_id']} --output params.yaml"
                 f"{store_option(tracking_uri)}",
                 f"dvc repro  # the {method} stages (design, respond, score, analyse, report): "
                 f"tables in pipeline/STAGE/, figures in pipeline/report/metrics.json"]
    if "answers.sha256" in tags:
        # An imported run's answers are not in the repository: a clone re-created nothing
        # without them, and the steps did not say so (CI review 2026-12-02).
        steps.insert(len(steps) - 1, (
            f"# before dvc repro: put the answers file the run read, "
            f"{tags.get('answers.source', '(its path)')}, where params.yaml's ingest.input "
            f"points, and check it is the same file (sha256 {tags['answers.sha256']}); the "
            "report names the digest of the file it read"))
    if dirty:
        steps.append(f"# the run had uncommitted changes ({dirty}=true): the commit alone may "
                     "not re-create it")
    return steps


def source_steps(tags: dict[str, str]) -> tuple[list[str], str | None]:
    """Where the code comes from: a checkout of the commit of audit's own code (audit.commit),
    or of the run's folder where that was audit's checkout, and the dirty tag that goes with it.
    Runs before audit.commit was recorded name only the folder's commit (git.commit), which was
    audit's checkout when run from its root; older runs recorded `unknown`."""
    audit_commit, folder_commit = tags.get("audit.commit"), tags.get("git.commit", "unknown")
    if audit_commit is not None and audit_commit != folder_commit:
        elsewhere = ("" if folder_commit == "unknown" else
                     f"; its own folder was commit {folder_commit[:10]} of another repository")
        return ([f"git checkout {audit_commit}  # in a clone of audit's repository (dvc.yaml "
                 f"and the stages' code are there; the run was made in another folder"
                 f"{elsewhere})"], "audit.dirty" if tags.get("audit.dirty") == "true" else None)
    if folder_commit != "unknown":
        return [f"git checkout {folder_commit}"], ("git.dirty" if tags.get("git.dirty") == "true"
                                                  else None)
    version = tags.get("audit.version", "unknown")
    return ([f"# audit {version} ran without a record of its commit (an installed wheel built "
             "outside a git checkout): in a clone of audit's repository, check out the commit "
             f"of version {version}"] if version != "unknown" else
            ["# made by a version of audit the run did not record, outside a git checkout"]), None


def store_option(tracking_uri: str) -> str:
    """audit.runs' option for the store the run was read from, unless it is the default: the
    steps of a run read with `--tracking-uri sqlite:////data/mlflow.db` said `audit.runs params
    ID`, which looked for the run in ./mlflow.db."""
    if tracking_uri == TrackingConfig.tracking_uri:
        return ""
    return f" --tracking-uri {shell_word(tracking_uri)}"


def sweep_steps(run: dict[str, Any], tracking_uri: str = TrackingConfig.tracking_uri
                ) -> list[str]:
    """The sweep's command (its `sweep.command` tag; a sweep logged before that tag existed is
    rebuilt from its task overrides, without Hydra's own), then how to list its new jobs."""
    tags = run["tags"]
    command = tags.get("sweep.command")
    if command is None:
        overrides = tags.get("sweep.overrides", "(none)")
        words = [] if overrides == "(none)" else overrides.split(" ")
        command = (" ".join(shell_word(word) for word in ["python", "-m", "audit", "-m", *words])
                   + "  # add the hydra.* overrides it ran with: this run did not record them")
    store = store_option(tracking_uri)
    return [command, f"python -m audit.runs --sweep NEW_PARENT_ID{store}  # the new sweep's jobs "
                     f"(the old ones: python -m audit.runs --sweep {run['run_id']}{store})"]


# audit.compare's options and the MLflow params its run records them as (cli/compare.py's
# gate_params): the same names, max_worsening's unit apart.
COMPARE_OPTIONS = ("worsening_prob", "items", "draws", "tune", "chains", "target_accept",
                   "judge_error")


def compare_steps(run: dict[str, Any], tracking_uri: str) -> list[str]:
    """The audit.compare command of a comparison run, from its tags (the two sources, and the
    models when it compared two models of one run) and its params (the gate and the sampler)."""
    tags, params = run["tags"], run["params"]
    run_a, run_b = tags.get("compare.run_a", "RUN_A"), tags.get("compare.run_b", "RUN_B")
    words = ["python", "-m", "audit.compare", run_a]
    if run_b == run_a:
        words += [f"model_a={tags.get('compare.model_a', 'MODEL_A')}",
                  f"model_b={tags.get('compare.model_b', 'MODEL_B')}"]
    else:
        words.append(run_b)
    if params.get("max_worsening", "none") != "none":
        unit = "pp" if params.get("unit") == "pp" else ""
        words.append(f"max_worsening={params['max_worsening']}{unit}")
    words += [f"{key}={params[key]}" for key in COMPARE_OPTIONS if key in params]
    if tracking_uri != TrackingConfig.tracking_uri:
        words.append(f"tracking_uri={tracking_uri}")
    steps = [" ".join(shell_word(word) for word in words)]
    if not all(RUN_ID.fullmatch(source) for source in (run_a, run_b)):
        steps.append("# a source that is not a run id is a run folder of the machine that "
                     "made the comparison")
    return steps
