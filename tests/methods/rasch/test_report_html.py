"""One small real audit (fake backend, rules-only judge, a tiny real fit) and what it publishes:
the MLflow run's tags, params, metrics and artifacts; report.html opened in a real headless
chromium with no network; and the runs table read back from the store."""

from __future__ import annotations

import copy
import io
import re
import shutil
from pathlib import Path

import mlflow
import polars as pl
import pytest
from browser import ARTIFACT_DIR, require_chromium
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf
from rich.console import Console

from audit.__main__ import CONF_DIR
from audit.cli.runs import main as runs_main
from audit.cli.runs import print_runs, write_params
from audit.config import ModelConfig
from audit.methods.configs import register_configs, to_audit_config
from audit.methods.rasch.method import STAGES
from audit.methods.run import run_stages
from audit.tracking.mlflow import find_runs, get_run
from audit.tracking.runs_table import runs_frame

PROJECT_ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.slow, pytest.mark.integration]
register_configs()


def _audit_config(tmp: Path):
    overrides = ["judge=rules_only", "items=smoke", "personas=smoke", "design.replicates=1",
                 "fit.draws=100",
                 "fit.tune=100", "fit.chains=2", "judge.gold_per_category=2",
                 f"paths.output_dir={tmp / 'run'}", f"paths.response_store={tmp / 'store.sqlite'}",
                 f"paths.root_dir={PROJECT_ROOT}",
                 f"tracking.tracking_uri=sqlite:///{tmp}/mlflow.db",
                 f"tracking.artifact_root={tmp / 'artifacts'}"]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = to_audit_config(compose("config", overrides=overrides))
    # api_key_env names the key's variable: kept in the params (the key never enters a config).
    cfg.model = {"fake": ModelConfig(backend="fake", model="fake-a", api_key_env="AUDIT_TEST_KEY")}
    for section, field in (("items", "bank"), ("personas", "explicit_file"),
                           ("personas", "names_file"), ("judge", "gold_file"),
                           ("judge", "gold_items")):
        target = getattr(cfg, section)
        setattr(target, field, str(PROJECT_ROOT / getattr(target, field)))
    return cfg


@pytest.fixture(scope="module")
def audit_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report_html")
    cfg = _audit_config(tmp)
    result = run_stages(STAGES, cfg, tmp / "run")
    return {"cfg": cfg, "tmp": tmp, "result": result, "run_id": result["run"].run_id,
            "uri": cfg.tracking.tracking_uri}


def test_the_run_carries_provenance_tags_params_and_stable_metrics(audit_run):
    run = get_run(audit_run["uri"], audit_run["run_id"])
    tags, params, metrics = run["tags"], run["params"], run["metrics"]
    assert re.fullmatch(r"[0-9a-f]{40}", tags["git.commit"])
    assert tags["git.dirty"] in ("true", "false")
    assert tags["dvc.lock.sha256"] == "absent" or re.fullmatch(r"[0-9a-f]{64}",
                                                               tags["dvc.lock.sha256"])
    assert re.fullmatch(r"[0-9a-f]{16}", tags["config.hash"])
    assert tags["package.pymc"] and tags["package.mlflow"] == mlflow.__version__
    assert tags["model.fake"] == "backend=fake model=fake-a digest=none"
    assert tags["converged"] == "false"  # 2 chains x 100 draws cannot reach an ESS of 400
    assert params["model.fake.api_key_env"] == "AUDIT_TEST_KEY"
    assert params["items.name"] == "smoke" and params["fit.draws"] == "100"
    for name in ("rhat_max", "ess_bulk_min", "judge/kappa", "judge/accuracy", "n_prompts",
                 "theta_mean/fake/white_man", "theta_mean/fake/baseline"):
        assert name in metrics, name
    assert metrics["n_prompts"] == 15
    assert metrics["judge/kappa"] == metrics["gold/cohen_kappa"]


def test_the_run_logs_config_posterior_tables_plots_and_the_report(audit_run):
    client = MlflowClient(audit_run["uri"])

    def listing(folder: str | None = None) -> set[str]:
        return {Path(item.path).name for item in client.list_artifacts(audit_run["run_id"], folder)}

    assert {"report.html", "config.yaml"} <= listing()
    assert "posterior.nc" in listing("fit")
    assert {"summary.csv", "theta_ranking.csv", "label_rates.csv"} <= listing("tables")
    assert {"forest_theta.png", "wright_map.png", "favourable_heatmap.png",
            "label_distribution.png", "trace_plot.png", "rank_plot.png"} <= listing("plots")
    # responses.parquet: what the model said (it was left out, so no gap could be checked).
    assert {"prompts.parquet", "responses.parquet", "labels.parquet"} <= listing("data")


def test_a_store_that_fails_keeps_the_report_and_is_one_line(audit_run, monkeypatch, tmp_path):
    """An unreachable MLflow server cost the report (it was rendered inside the MLflow run) and
    ended in a traceback after minutes of retries: now report.html is written first and the
    failure is one TrackingError naming the store, the fix and where the files are."""
    from audit.methods.rasch.method import StageFiles
    from audit.methods.rasch.report.publish import publish_from_files
    from audit.tracking.mlflow import TrackingError

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    cfg = copy.deepcopy(audit_run["cfg"])
    cfg.tracking.tracking_uri = "http://127.0.0.1:9"
    run_dir = shutil.copytree(audit_run["tmp"] / "run", tmp_path / "run")  # the others' stays
    report = run_dir / "report" / "report.html"
    report.unlink()
    with pytest.raises(TrackingError) as failed:
        publish_from_files(cfg, StageFiles(run_dir))
    assert report.is_file() and "MLflow run <code>" not in report.read_text()
    message = str(failed.value)
    assert "\n" not in message and "http://127.0.0.1:9" in message
    assert "start the server" in message and "tracking=none" in message
    assert str(run_dir) in message


def test_the_runs_json_files_are_strict_json_with_null_for_no_value(audit_run):
    """Bug caught: report/metrics.json and fit/diagnostics.json held a bare NaN (a rules-only
    judge has no judge accuracy on its gold sample), which is not JSON: jq, JavaScript's
    JSON.parse and dashboards refused the whole file. A figure with no value is null on disk
    and still NaN in the MLflow run."""
    import json
    import math

    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    run_dir = audit_run["tmp"] / "run"
    files = sorted(run_dir.rglob("*.json"))
    assert {"metrics.json", "diagnostics.json"} <= {path.name for path in files}
    parsed = {path.relative_to(run_dir).as_posix(): json.loads(path.read_text(),
                                                                parse_constant=refuse)
              for path in files}
    assert parsed["report/metrics.json"]["gold/judge_accuracy"] is None
    logged = get_run(audit_run["uri"], audit_run["run_id"])["metrics"]
    assert math.isnan(logged["gold/judge_accuracy"])


def test_the_report_is_self_contained(audit_run):
    html = (audit_run["tmp"] / "run" / "report" / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') >= 7
    external = re.findall(r'(?:src|href)\s*=\s*"(?!data:)([^"]*)"', html)
    assert external == [], external
    assert "Content-Security-Policy" in html and audit_run["run_id"] in html
    # The smoke personas alias gender with race: the page says so among its warnings, where
    # only the fit's log did (review of what reaches the user, 2026-12-02).
    warnings = html.split("Warnings raised by this run")[1]
    assert "every gender level goes with one race level (man: White, woman: Black)" in warnings


def test_the_report_renders_in_headless_chromium_without_network(audit_run, tmp_path):
    executable = require_chromium()
    from playwright.sync_api import sync_playwright

    report = audit_run["tmp"] / "run" / "report" / "report.html"
    errors: list[str] = []
    blocked: list[str] = []
    with sync_playwright() as playwright:
        # No sandbox: CI runs as root. The proxy points nowhere, the context is offline, and every
        # request but the page itself is aborted: the page must render from the file alone.
        browser = playwright.chromium.launch(
            executable_path=executable,
            args=["--no-sandbox", "--proxy-server=127.0.0.1:9", "--disable-background-networking"])
        context = browser.new_context(offline=True, viewport={"width": 1200, "height": 900})

        def guard(route):
            if route.request.url == report.as_uri():
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()

        context.route("**/*", guard)
        page = context.new_page()
        page.on("console", lambda message: message.type == "error" and errors.append(message.text))
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(report.as_uri(), wait_until="load")
        headings = {section: page.locator(f"section#{section} h2").inner_text()
                    for section in ("audited", "contrasts", "judge", "diagnostics", "reading")}
        images_ok = page.evaluate(
            "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
        image_count = page.evaluate("document.images.length")
        banner = page.locator("#convergence-banner").inner_text()
        ARTIFACT_DIR.mkdir(exist_ok=True)
        screenshot = tmp_path / "report_html.png"
        page.screenshot(path=str(screenshot), full_page=True)
        shutil.copy2(screenshot, ARTIFACT_DIR / "report_html.png")
        browser.close()
    print(f"report screenshot: {ARTIFACT_DIR / 'report_html.png'}")
    assert errors == [] and blocked == []
    assert headings == {"audited": "What was audited", "contrasts": "Headline contrasts",
                        "judge": "Judge quality", "diagnostics": "Diagnostics",
                        "reading": "Reading the result"}
    assert images_ok and image_count >= 7
    assert "NOT CONVERGED" in banner and "fit.draws" in banner
    assert screenshot.stat().st_size > 50_000


def test_the_runs_table_lists_the_run_without_the_ui(audit_run, capsys, tmp_path):
    table = tmp_path / "runs.csv"
    assert runs_main(["--tracking-uri", audit_run["uri"], "--metric", "theta_mean/fake/w*",
                      "--csv", str(table)]) == 0
    printed = capsys.readouterr().out
    assert audit_run["run_id"][:8] in printed and "rasch fake" in printed
    written = pl.read_csv(table)
    assert audit_run["run_id"] in written["run_id"].to_list()
    assert {"metric:rhat_max", "metric:theta_mean/fake/white_man"} <= set(written.columns)

    runs = find_runs(audit_run["uri"], "audit")
    buffer = io.StringIO()
    print_runs(runs_frame(runs), "runs", Console(file=buffer, width=200))
    assert "rhat_max" in buffer.getvalue()


def test_show_and_params_give_back_the_commit_and_config(audit_run, capsys, tmp_path):
    short = audit_run["run_id"][:8]
    assert runs_main(["--tracking-uri", audit_run["uri"], "show", short]) == 0
    printed = capsys.readouterr().out
    commit = get_run(audit_run["uri"], audit_run["run_id"])["tags"]["git.commit"]
    assert f"git checkout {commit}" in printed and "dvc repro" in printed

    from audit.config import TrackingConfig
    from audit.methods.configs import with_dvc_params

    written = write_params(TrackingConfig(tracking_uri=audit_run["uri"]), audit_run["run_id"],
                           tmp_path / "params.yaml")
    recreated = to_audit_config(OmegaConf.load(written))
    expected = audit_run["cfg"]
    assert recreated.paths.output_dir == "pipeline"
    recreated.paths.output_dir = expected.paths.output_dir
    # with the DVC params dvc.yaml lists, which a run's own config.yaml does not hold
    assert recreated == with_dvc_params(expected) and recreated.dvc_params["analyse"]["fit"]


def test_an_unknown_run_is_a_one_line_error(audit_run, caplog):
    assert runs_main(["--tracking-uri", audit_run["uri"], "show", "ffffffff"]) == 2
    assert "0 runs" in caplog.text and "ffffffff" in caplog.text
    caplog.clear()
    # An experiment the store lacks is a user's error, named with those it has.
    assert runs_main(["--tracking-uri", audit_run["uri"], "--experiment", "nope"]) == 2
    assert "no experiment 'nope'" in caplog.text and "'audit'" in caplog.text


def test_labels_feed_the_heatmap_table(audit_run):
    run_dir = audit_run["tmp"] / "run"
    from audit.methods.rasch.report.plots import favourable_rates

    rates = favourable_rates(pl.read_parquet(run_dir / "prompts.parquet"),
                             pl.read_parquet(run_dir / "labels.parquet"))
    assert rates.height == 15 and rates["rate"].is_between(0, 1).all()


def test_contrasts_and_advice_the_fit_writes_reach_the_run_and_the_page(audit_run):
    """An explanatory fit writes fit/contrasts.csv and fit/diagnostics.json; the report stage
    turns them into stable metric names, a forest plot, table rows and the banner's advice."""
    from audit.methods.rasch.report.publish import publish_from_files
    from audit.methods.rasch.method import StageFiles

    files = StageFiles(audit_run["tmp"] / "run")
    pl.DataFrame({
        "model_name": ["fake", "fake"], "attribute": ["gender", "race"],
        "level_a": ["woman", "Black"], "level_b": ["man", "White"], "mean": [0.4, -0.7],
        "sd": [0.2, 0.3], "hdi_low": [0.05, -1.2], "hdi_high": [0.8, -0.2],
        "p_direction": [0.98, 0.995], "rope_low": [-0.1, -0.1], "rope_high": [0.1, 0.1],
        "decision": ["different", "different"], "noise_floor": [0.62, None],
        "noise_floor_low": [0.41, None], "noise_floor_high": [0.9, None],
        "p_beyond_noise": [0.04, None], "null_percentile": [0.498, None],
        "decision_prob": [0.975, 0.975], "decision_low": [0.01, -1.3],
        "decision_high": [0.85, -0.15], "decision_interval_kind": ["hdi", "normal"]}
    ).write_csv(files.fit / "contrasts.csv")
    (files.fit / "diagnostics.json").write_text(
        '{"converged": false, "rhat_max": 1.03, "ess_bulk_min": 187, "ess_tail_min": 96, '
        '"divergences": 0, "advice": "draw longer chains: fit.draws=2000 fit.tune=2000"}')
    try:
        result = publish_from_files(audit_run["cfg"], files)
    finally:
        (files.fit / "contrasts.csv").unlink()
        (files.fit / "diagnostics.json").unlink()
    run = get_run(audit_run["uri"], result["run"].run_id)
    assert run["metrics"]["contrast/gender/woman_vs_man/mean"] == 0.4
    assert run["metrics"]["contrast/race/Black_vs_White/hdi_high"] == -0.2
    artifacts = {item.path for item in
                 MlflowClient(audit_run["uri"]).list_artifacts(result["run"].run_id, "fit")}
    assert {"fit/contrasts.csv", "fit/diagnostics.json", "fit/posterior.nc"} <= artifacts
    page = result["report"].read_text()
    assert "draw longer chains: fit.draws=2000" in page
    assert "woman vs man" in page and "[+0.05, +0.80]" in page
    assert "For fake, race Black versus White: Black personas were treated less favourably" in page
    # The headline shows the noise floor with its interval (n/a without null personas) and reads
    # a `different` gap inside it as no demographic finding.
    assert "<th>noise floor [94% HDI]</th>" in page
    assert '<td class="num">0.62 [0.41, 0.90]</td>' in page
    assert '<td class="num">n/a</td>' in page
    assert "gender woman versus man" in page and "null percentile" in page
    # Review of what reaches the user, 2026-12-02: the percentile (0 to 100) was printed bare,
    # 0.50 for half a percent, read as a share (a median gap); and the decision interval was
    # called an HDI where the draws gave a normal interval, as the summary and plot say.
    assert '<td class="num">0.498%</td>' in page
    assert "97.5% HDI [+0.01, +0.85]" in page and "97.5% normal interval [-1.30, -0.15]" in page
    assert (files.report / "contrasts_forest.png").is_file()


def test_the_no_signal_metric_is_one_exactly_when_the_run_ends_with_the_no_signal_headline(
        audit_run):
    """Mutation review 2026-12-06: the metric was unchecked."""
    import json

    metrics = json.loads((audit_run["tmp"] / "run" / "report" / "metrics.json").read_text())
    expected = 1.0 if audit_run["result"]["no_signal"] else 0.0
    assert metrics["no_signal"] == expected
    assert get_run(audit_run["uri"], audit_run["run_id"])["metrics"]["no_signal"] == expected


def test_the_page_gives_the_digest_the_audited_models_backend_reports(audit_run):
    """Mutation review 2026-12-06: the page's model table dropped to the config's fields
    unnoticed."""
    page = (audit_run["tmp"] / "run" / "report" / "report.html").read_text()
    assert '<td>fake-a</td><td><code title="none">none</code></td>' in page


def _republished(audit_run, tmp_path: Path, change) -> dict:
    """publish_from_files on a copy of the run, changed by `change(run_dir)`, not tracked."""
    from audit.methods.rasch.method import StageFiles
    from audit.methods.rasch.report.publish import publish_from_files

    run_dir = shutil.copytree(audit_run["tmp"] / "run", tmp_path / "run")
    change(run_dir)
    cfg = copy.deepcopy(audit_run["cfg"])
    cfg.tracking.enabled = False
    return publish_from_files(cfg, StageFiles(run_dir))


def test_a_panels_votes_on_answers_the_rules_labelled_are_no_panel_agreement(audit_run, tmp_path):
    """Mutation review 2026-12-06: the panel's re-reads of rule labels are checked against the
    rules (judge_rule_agreement.csv), not counted as agreement; untested with one judge."""
    def two_judges(run_dir: Path) -> None:
        labels = pl.read_parquet(run_dir / "labels.parquet")
        assert set(labels["label_source"]) == {"rule"}
        pl.concat([labels.select(answer_id="prompt_id", judge=pl.lit(judge), label="label",
                                 rationale=pl.lit("")) for judge in ("a", "b")]
                  ).write_parquet(run_dir / "judge_votes.parquet")

    result = _republished(audit_run, tmp_path, two_judges)
    assert (result["report"].parent / "judge_rule_agreement.csv").is_file()  # the votes were read
    panel = {"judge/n_judges", "judge/krippendorff_alpha", "judge/fleiss_kappa"}
    assert not panel & set(result["metrics"])
    assert not any(name.startswith("judge/agreement") for name in result["metrics"])


def test_the_judge_rate_table_leaves_out_the_paths_read_as_truth(audit_run, tmp_path):
    """Mutation review 2026-12-06: a path read as truth has rates of 1 by construction, shown
    as measured perfect (judge review 2026-12-02); untested with a rules-only judge."""
    def rates(run_dir: Path) -> None:
        summary = run_dir / "fit" / "summary.csv"
        table = pl.read_csv(summary).filter(~pl.col("parameter").str.starts_with("judge_"))
        extra = pl.concat([table.head(1).with_columns(parameter=pl.lit(name), mean=pl.lit(mean))
                           for name, mean in (("judge_sensitivity[rule]", 1.0),
                                              ("judge_sensitivity[judge:x]", 0.87))])
        pl.concat([table, extra]).write_csv(summary)
        (run_dir / "fit" / "diagnostics.json").write_text(
            '{"judge_error": {"favourable": {"labels_as_truth": ["rule"], "weak_gold": {}}}}')

    page = _republished(audit_run, tmp_path, rates)["report"].read_text()
    assert "<td>judge_sensitivity[judge:x]</td>" in page
    assert "<td>judge_sensitivity[rule]</td>" not in page


def test_the_ranking_table_has_one_row_per_respondent(audit_run):
    """Mutation review 2026-12-06: respondents taken from the prompts without dropping their
    repeats (one row a prompt) went unnoticed."""
    ranking = pl.read_csv(audit_run["tmp"] / "run" / "report" / "theta_ranking.csv")
    prompts = pl.read_parquet(audit_run["tmp"] / "run" / "prompts.parquet")
    assert prompts.height > prompts["respondent_id"].n_unique()
    assert sorted(ranking["respondent_id"]) == sorted(prompts["respondent_id"].unique())


def test_a_run_whose_labels_carry_no_signal_returns_the_headline_and_logs_it(audit_run,
                                                                            tmp_path):
    """Mutation review 2026-12-06: the smoke run has a signal, so the no-signal headline the
    stage returns for the run's closing summary was untested."""
    def one_label(run_dir: Path) -> None:
        labels = pl.read_parquet(run_dir / "labels.parquet")
        labels.with_columns(label=pl.lit("favourable")).write_parquet(run_dir / "labels.parquet")

    result = _republished(audit_run, tmp_path, one_label)
    assert result["no_signal"] and result["metrics"]["no_signal"] == 1.0


def test_the_page_counts_the_requests_that_failed(audit_run, tmp_path):
    """Mutation review 2026-12-06: the smoke run has no failed request, so the caveat that
    counts them was untested at the stage that passes the count on."""
    def one_failure(run_dir: Path) -> None:
        responses = pl.read_parquet(run_dir / "responses.parquet")
        failed = pl.int_range(pl.len()) == 0
        responses.with_columns(status=pl.when(failed).then(pl.lit("error"))
                               .otherwise(pl.col("status"))).write_parquet(
            run_dir / "responses.parquet")

    page = _republished(audit_run, tmp_path, one_failure)["report"].read_text()
    # It read "1 requests failed after retries and are missing".
    assert "1 request failed after retries and is missing from the design." in page
