"""Where a run is seen in MLflow's UI: its description, and the runs table the printed URL opens.

MLflow 3's UI opens an experiment on a GenAI "Overview" unless the URL says otherwise: which page
it lands on is front-end state (the `workflowType` URL parameter, else the browser's local storage,
else GenAI; MLflow 3.17's bundle derives the experiment kind from that state and ignores the
`mlflow.experimentKind` tag), and no server-side setting changes it. So a run prints the URL of the
experiment's runs table (`runs_page_url`), which also names a shared view (an experiment tag the
UI reads: `mlflow.sharedViewState.KEY`) that shows the method's headline metrics as columns.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable

from audit.tracking.mlflow import metric_name
from audit.tracking.store import retried_on_write_race, store_errors

# The run's description in the UI (its "Description" box and column) is this tag.
RUN_DESCRIPTION_TAG = "mlflow.note.content"
# The experiment tag a runs-table URL with `viewStateShareKey=KEY` loads its view from (the UI's
# "Share" button writes the same): JSON with `selectedColumns` and the table's other settings.
SHARED_VIEW_TAG = "mlflow.sharedViewState."
SHARED_VIEW_KEY = "viewStateShareKey"
# The UI's URL parameter for its machine-learning mode, where an experiment opens on its runs.
RUNS_WORKFLOW = "workflowType=machine_learning"
# Where `mlflow ui` serves by default (the README's command binds it to 127.0.0.1).
LOCAL_UI = "http://127.0.0.1:5000"
MAX_VIEW_COLUMNS = 16


def set_run_description(tracking_uri: str, run_id: str, text: str) -> None:
    from mlflow.tracking import MlflowClient

    with store_errors(tracking_uri):
        MlflowClient(tracking_uri).set_tag(run_id, RUN_DESCRIPTION_TAG, text)


def set_run_tag(tracking_uri: str, run_id: str, key: str, value: str) -> None:
    from mlflow.tracking import MlflowClient

    with store_errors(tracking_uri):
        MlflowClient(tracking_uri).set_tag(run_id, key, value)


def metric_column(name: str) -> str:
    """A metric's column key in the UI's runs table (its `selectedColumns` entries)."""
    return f"metrics.`{metric_name(name)}`"


def set_runs_view(tracking_uri: str, experiment_id: str, key: str,
                  metrics: Iterable[str]) -> None:
    """The shared view `key` of the experiment shows these metrics as columns, newest first; the
    columns an earlier run put there stay after them (a run of another model names its own
    metrics), up to MAX_VIEW_COLUMNS."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    tag = f"{SHARED_VIEW_TAG}{key}"
    wanted = [metric_column(name) for name in metrics]

    def merge_and_write() -> None:
        stored = client.get_experiment(experiment_id).tags.get(tag, "{}")
        try:
            earlier = json.loads(stored)
        except json.JSONDecodeError:
            earlier = {}
        columns = wanted + [column for column in earlier.get("selectedColumns", [])
                            if column.startswith("metrics.") and column not in wanted]
        view = {"selectedColumns": columns[:MAX_VIEW_COLUMNS],
                "orderByKey": "attributes.start_time", "orderByAsc": False}
        client.set_experiment_tag(experiment_id, tag, json.dumps(view))

    with store_errors(tracking_uri):
        retried_on_write_race(merge_and_write)


def ui_base_url(tracking_uri: str) -> str:
    """The UI that shows a store: a tracking server is its own UI; a local store (sqlite, a
    folder) is shown by `mlflow ui`, on port 5000 unless told otherwise."""
    if tracking_uri.startswith(("http://", "https://")):
        return tracking_uri.rstrip("/")
    return LOCAL_UI


def runs_page_url(tracking_uri: str, experiment_id: str, view_key: str | None = None) -> str:
    """The experiment's runs table (not MLflow 3's GenAI overview), with the shared view."""
    view = f"&{SHARED_VIEW_KEY}={view_key}" if view_key else ""
    return f"{ui_base_url(tracking_uri)}/#/experiments/{experiment_id}/runs?{RUNS_WORKFLOW}{view}"


def ui_command(tracking_uri: str) -> str | None:
    """The command that serves the UI for a local store; None for a tracking server."""
    if tracking_uri.startswith(("http://", "https://")):
        return None
    # Quoted: a store in a folder with a space ("sqlite:///My Audits/mlflow.db") gave the shell
    # two words, and `mlflow ui` refused the second.
    return (f"mlflow ui --backend-store-uri {shlex.quote(tracking_uri)} --host 127.0.0.1 "
            "--port 5000")
