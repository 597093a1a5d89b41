"""Two runs that write one MLflow row at the same moment both succeed (a real SQLite store, two
processes released together by a barrier).

MLflow's SQL store sets an experiment tag by reading it, then inserting it when it was missing:
two jobs of a parallel sweep that finished together both found the runs table's view missing,
and the second insert failed the job ("UNIQUE constraint failed: experiment_tags.key", CI,
2026-12-01). Measured on this store, two processes released together at a new tag: one of them
failed in 6 or 7 of 30 rounds on one CPU (the pytest worker's share) and 22 of 30 on two, so 40
rounds fail without the retry with a probability above 0.999.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

from audit.config import TrackingConfig
from audit.tracking import mlflow as tracking
from audit.tracking import store, ui

ROUNDS = 40
VIEW = ui.SHARED_VIEW_TAG + "round{}"


def _store(tmp_path: Path) -> TrackingConfig:
    """A store whose tables exist (creating them is MLflow's own first-use step, not raced here)."""
    from mlflow.tracking import MlflowClient

    config = TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}",
                            artifact_root=str(tmp_path / "artifacts"))
    MlflowClient(config.tracking_uri).search_experiments()
    return config


def _views(who, barrier, failures, config, experiment_id):
    for round_ in range(ROUNDS):
        barrier.wait()
        try:
            ui.set_runs_view(config.tracking_uri, experiment_id, f"round{round_}",
                             [f"metric_{who}"])
        except Exception as error:  # noqa: BLE001 - what failed is the test's finding
            failures.put(f"round {round_}: {error}")


def _experiments(who, barrier, failures, config, ids):
    for round_ in range(ROUNDS):
        barrier.wait()
        try:
            ids.put((round_, tracking._experiment_id(
                TrackingConfig(tracking_uri=config.tracking_uri, experiment=f"audit{round_}",
                               artifact_root=config.artifact_root))))
        except Exception as error:  # noqa: BLE001
            failures.put(f"round {round_}: {error}")


def _together(target, *arguments) -> list[str]:
    """target(who, barrier, failures, *arguments) in two processes released together by the
    barrier at each round; what failed in either."""
    context = multiprocessing.get_context("fork")
    barrier, failures = context.Barrier(2), context.Queue()
    workers = [context.Process(target=target, args=(who, barrier, failures, *arguments))
               for who in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0, worker.exitcode
    found = []
    while not failures.empty():
        found.append(failures.get())
    return found


def test_two_runs_that_finish_together_both_write_the_runs_view(tmp_path):
    """Fails without the retry: one of the two writes of a new view tag loses the race and the
    run ends in a TrackingError, as the joblib sweep did."""
    config = _store(tmp_path)
    experiment_id = tracking._experiment_id(config)
    assert _together(_views, config, experiment_id) == []
    from mlflow.tracking import MlflowClient

    tags = MlflowClient(config.tracking_uri).get_experiment(experiment_id).tags
    for round_ in range(ROUNDS):
        columns = json.loads(tags[VIEW.format(round_)])["selectedColumns"]
        assert set(columns) <= {ui.metric_column("metric_a"),
                                ui.metric_column("metric_b")} and columns, columns


def test_two_runs_that_start_together_on_a_new_experiment_share_it(tmp_path):
    """Fails when the run that loses the race to create the experiment stops ("already exists")
    instead of reading the one the other run made, or makes a second one; or, on an experiment
    an older version made (without the kind tag: every other round here), when the second run
    to add the tag loses that race."""
    from mlflow.tracking import MlflowClient

    config = _store(tmp_path)
    client = MlflowClient(config.tracking_uri)
    older = {round_: client.create_experiment(f"audit{round_}") for round_ in range(1, ROUNDS, 2)}
    ids = multiprocessing.get_context("fork").Queue()
    assert _together(_experiments, config, ids) == []
    by_round: dict[int, set[str]] = {}
    while not ids.empty():
        round_, experiment_id = ids.get()
        by_round.setdefault(round_, set()).add(experiment_id)
    assert sorted(by_round) == list(range(ROUNDS))
    assert all(len(found) == 1 for found in by_round.values()), by_round
    assert all(by_round[round_] == {older[round_]} for round_ in older)
    assert all(client.get_experiment_by_name(f"audit{round_}").tags.get(
        tracking.EXPERIMENT_KIND_TAG) == tracking.EXPERIMENT_KIND for round_ in range(ROUNDS))


NEW_STORE_ROUNDS = 5


def _new_stores(who, barrier, failures, folder):
    for round_ in range(NEW_STORE_ROUNDS):
        barrier.wait()
        try:
            store.reach_store(TrackingConfig(tracking_uri=f"sqlite:///{folder}/round{round_}.db",
                                             artifact_root=str(folder / "artifacts")))
        except Exception as error:  # noqa: BLE001
            failures.put(f"round {round_}: {error}")


def test_two_runs_that_start_together_on_a_new_store_both_reach_it(tmp_path):
    """Fails without the wait: both processes make the new SQLite store's tables (MLflow's
    schema migrations) and one fails on the other's ("table latest_metrics already exists",
    "duplicate column name: step", alembic's "Online migration expected to match one row"),
    told to fix a setting that was right (4 of 4 pairs of audits on a new store, concurrency
    probe 2026-12-07)."""
    assert _together(_new_stores, tmp_path) == []
