"""One live run a run folder (audit.methods.run_folder): a second command into a folder that a
run still writes is refused with one line before anything is written there; the lock goes with
its process, however that ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from audit.methods import run_folder

PROJECT_ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(run_folder.fcntl is None, reason="no flock on this platform")


@pytest.fixture(autouse=True)
def _nothing_locked():
    run_folder.release()
    run_folder.release(sweep=True)
    yield
    run_folder.release()
    run_folder.release(sweep=True)


def _holder(folder: Path) -> subprocess.Popen:
    """Another process whose run holds the folder until it is killed."""
    script = textwrap.dedent(f"""
        import time
        from pathlib import Path
        from audit.methods import run_folder
        run_folder.lock(Path({str(folder)!r}))
        print("locked", flush=True)
        time.sleep(120)
    """)
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")})
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_folder_another_process_writes_is_refused_until_that_process_is_killed(tmp_path):
    """Bugs caught: no lock (two runs wrote one folder and one printed the other's gaps,
    probe 2026-12-07), and a lock that outlives its process (a run killed by kill -9 would
    lock its folder for good)."""
    folder = tmp_path / "run"
    holder = _holder(folder)
    try:
        with pytest.raises(run_folder.RunFolderInUse):
            run_folder.lock(folder)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    run_folder.lock(folder)  # the kernel let go of it with the process


def test_a_process_may_run_again_in_its_own_folder_and_frees_it_when_its_run_ends(tmp_path):
    """Bugs caught: a second run in one process (a notebook, the test suite) refused by its own
    earlier lock, and a lock kept after the run ended (a later command in another process
    refused)."""
    folder = tmp_path / "run"
    run_folder.lock(folder)
    run_folder.lock(folder)
    run_folder.release()
    holder = _holder(folder)  # would block on the lock if this process still held it
    holder.kill()
    holder.wait()


def test_the_audit_command_into_a_folder_in_use_says_so_and_writes_nothing(tmp_path):
    """Bug caught: the callback left out of conf/config.yaml, or an Exception (which Hydra turns
    into a warning before it runs the job anyway) instead of the one line and exit 2, or the
    line printed on stdout (Hydra's own log config) instead of stderr. The
    folder of the run at work is as it was: no `.hydra/` record, no log of the refused
    command."""
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "labels.parquet").write_bytes(b"the running audit's")
    holder = _holder(folder)
    try:
        done = subprocess.run([sys.executable, "-m", "audit", f"hydra.run.dir={folder}",
                               "tracking=none"], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120,
                              env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")})
    finally:
        holder.kill()
        holder.wait()
    said = done.stdout + done.stderr
    assert done.returncode == 2, said[-2000:]
    # On stderr: Hydra's own log config (in force before the job's) printed it to stdout, where
    # `python -m audit > result.txt` keeps the result.
    assert f"run folder {folder} is in use by another run that has not finished" in done.stderr
    assert done.stdout == ""
    assert "Traceback" not in said, said[-2000:]
    assert sorted(path.name for path in folder.iterdir()) == ["labels.parquet"]


def _composed(overrides: list[str]):
    from hydra import compose, initialize_config_dir

    from audit.config import CONF_DIR

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose("config", overrides=overrides, return_hydra_config=True)


def test_a_run_given_no_folder_moves_beside_one_in_use_and_a_chosen_folder_is_refused(
        tmp_path, monkeypatch):
    """Bugs caught: two runs started in the same second without hydra.run.dir (a script that
    starts several audits) share outputs/DATE/TIME/, where the second was refused although it
    chose no folder; and a folder the user chose (CI reads its files there) swapped for
    another. The default in conf/config.yaml must also stay the pattern the callback knows."""
    monkeypatch.chdir(tmp_path)
    config = _composed([])
    taken = tmp_path / str(config.hydra.run.dir)  # `now` is resolved once a process
    holder = _holder(taken)
    try:
        run_folder.RunFolderLockCallback().on_run_start(config=config)
        assert str(config.hydra.run.dir) == f"{taken.relative_to(tmp_path)}-2"
        run_folder.release()
        chosen = _composed([f"hydra.run.dir={taken}"])
        with pytest.raises(SystemExit) as refused:
            run_folder.RunFolderLockCallback().on_run_start(config=chosen)
        assert refused.value.code == 2 and str(chosen.hydra.run.dir) == str(taken)
    finally:
        holder.kill()
        holder.wait()


def test_a_sweep_into_a_sweep_folder_in_use_is_refused_before_its_parent_run(tmp_path):
    """Bug caught (re-probe 2026-12-07): two sweeps in one sweep folder (hydra.sweep.dir, or the
    default started in the same second) wrote the same job folders: both exited 1 with
    h5netcdf tracebacks, a job blamed its judge for the other's labels. Also fails when the
    lock comes after mlflow_sweep's parent run (a refused sweep left a FAILED parent)."""
    import sqlite3

    folder = tmp_path / "sweep"
    holder = _holder(folder)
    store = tmp_path / "mlflow.db"
    try:
        done = subprocess.run([sys.executable, "-m", "audit", "-m", "design.seed=1,2",
                               f"hydra.sweep.dir={folder}",
                               f"tracking.tracking_uri=sqlite:///{store}",
                               f"tracking.artifact_root={tmp_path / 'artifacts'}"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")})
    finally:
        holder.kill()
        holder.wait()
    said = done.stdout + done.stderr
    assert done.returncode == 2, said[-2000:]
    assert (f"sweep folder {folder} is in use by another sweep that has not finished"
            in done.stderr) and done.stdout == ""
    assert "Traceback" not in said, said[-2000:]
    assert list(folder.iterdir()) == []
    runs = (sqlite3.connect(store).execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            if store.exists() and store.stat().st_size else 0)
    assert runs == 0


def _other_process_can_lock(folder: Path) -> bool:
    script = textwrap.dedent(f"""
        from pathlib import Path
        from audit.methods import run_folder
        try:
            run_folder.lock(Path({str(folder)!r}))
            print("locked")
        except run_folder.RunFolderInUse:
            print("in use")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT / "src")})
    return done.stdout.strip() == "locked"


def test_a_sweep_holds_its_folder_through_its_jobs_runs_until_it_ends(tmp_path):
    """Bug caught: each job's run ends by letting go of this process's locks (run_composed),
    and a basic launcher runs the jobs in the sweep's own process, so the sweep's folder was
    free for another sweep after its first job."""
    folder = tmp_path / "sweep"
    config = _composed(["hydra.mode=MULTIRUN", f"hydra.sweep.dir={folder}"])
    callback = run_folder.RunFolderLockCallback()
    callback.on_multirun_start(config=config)
    run_folder.release()  # a job's run ended
    assert not _other_process_can_lock(folder)
    callback.on_multirun_end(config=config)
    assert _other_process_can_lock(folder)
