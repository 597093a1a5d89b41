#!/usr/bin/env bash
# Issue 20, commit 1: pure moves into the target layout (git mv), then import-path rewrites.
# Run from the repository root of a clean checkout of main@f7aec8f. To port another branch's NEW
# files (written in the flat layout) run only: python3 restructure_rewrite.py FILE...
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
mv_() { mkdir -p "$(dirname "$2")"; git mv "$1" "$2"; }
S=src/audit
# shared LLM plumbing
mv_ $S/engine.py $S/llm/engine.py
mv_ $S/preflight.py $S/llm/preflight.py
mv_ $S/store.py $S/llm/store.py
mv_ $S/backends $S/llm/backends
# tracking
mv_ $S/tracking.py $S/tracking/mlflow.py
mv_ $S/sweeps.py $S/tracking/sweeps.py
# shared statistics
mv_ $S/intervals.py $S/stats/intervals.py
# rasch
mv_ $S/methods/rasch.py $S/methods/rasch/method.py
mv_ $S/stages.py $S/methods/rasch/stages.py
mv_ $S/judge $S/methods/rasch/judge
mv_ $S/irt $S/methods/rasch/irt
mv_ $S/publish.py $S/methods/rasch/report/publish.py
mv_ $S/report.py $S/methods/rasch/report/summary.py
mv_ $S/report_html.py $S/methods/rasch/report/html.py
mv_ $S/plots.py $S/methods/rasch/report/plots.py
mv_ $S/reading.py $S/methods/rasch/report/reading.py
mv_ $S/run_metrics.py $S/methods/rasch/report/metrics.py
mv_ $S/templates $S/methods/rasch/report/templates
# iat
mv_ $S/methods/iat.py $S/methods/iat/design.py
mv_ $S/methods/iat_method.py $S/methods/iat/method.py
mv_ $S/methods/iat_parse.py $S/methods/iat/score.py
mv_ $S/methods/iat_stats.py $S/methods/iat/analyse.py
mv_ $S/methods/iat_plots.py $S/methods/iat/report.py
mv_ $S/methods/iat_schemas.py $S/methods/iat/schemas.py
# dif
mv_ $S/methods/dif.py $S/methods/dif/method.py
mv_ $S/methods/dif_run.py $S/methods/dif/run.py
mv_ $S/methods/dif_items.py $S/methods/dif/design.py
mv_ $S/methods/dif_extract.py $S/methods/dif/score.py
mv_ $S/methods/dif_stats.py $S/methods/dif/analyse.py
mv_ $S/methods/dif_plots.py $S/methods/dif/report.py
mv_ $S/methods/dif_schemas.py $S/methods/dif/schemas.py
mv_ $S/methods/dif_compare.py $S/methods/dif/compare.py
# counterfactual
mv_ $S/methods/counterfactual.py $S/methods/counterfactual/method.py
mv_ $S/methods/counterfactual_templates.py $S/methods/counterfactual/design.py
mv_ $S/methods/text_metrics.py $S/methods/counterfactual/score.py
mv_ $S/methods/counterfactual_stats.py $S/methods/counterfactual/analyse.py
mv_ $S/methods/counterfactual_plots.py $S/methods/counterfactual/report.py
mv_ $S/methods/counterfactual_schemas.py $S/methods/counterfactual/schemas.py
# entry points (the old module names get one-line forwarders in the same commit)
mv_ $S/fit.py $S/cli/fit.py
mv_ $S/iat.py $S/cli/iat.py
mv_ $S/judge_eval.py $S/cli/judge_eval.py
mv_ $S/runs.py $S/cli/runs.py
mv_ $S/params.py $S/cli/params.py
mv_ $S/plan.py $S/cli/plan.py
mv_ $S/power.py $S/methods/rasch/power.py
mv_ $S/methods/counterfactual_design_tests.py $S/methods/counterfactual/design_tests.py
# verdict.py stays where it is in this commit: another branch edits it (issue 20 (f) splits it).
# configs ship in the package
mv_ conf $S/conf
# tests mirror the packages
T=tests
for f in test_engine test_store test_request_key test_backends_servers test_fleet test_faults test_kill_resume test_embedded_determinism test_packaged_models; do mv_ $T/$f.py $T/llm/$f.py; done
for f in test_tracking test_sweeps; do mv_ $T/$f.py $T/tracking/$f.py; done
for f in test_fit_cli test_iat_cli test_verdict test_config_errors test_dvc_pipeline test_plan test_quiet_exit; do mv_ $T/$f.py $T/cli/$f.py; done
for f in test_irt_calibration test_irt_contrasts test_irt_exact test_irt_explanatory test_irt_mapping test_irt_outcome test_irt_recovery test_fit_outputs test_irt_hurdle test_irt_judge_error test_irt_noise_floor test_irt_noise_floor_report test_fit_stage_models; do mv_ $T/$f.py $T/methods/rasch/irt/$f.py; done
for f in test_judge_agreement test_judge_gold test_judge_injection test_judge_llm test_judge_logprob test_judge_rules test_judge_default_gold test_judge_options; do mv_ $T/$f.py $T/methods/rasch/judge/$f.py; done
for f in test_report test_report_html test_reading test_integration test_no_signal; do mv_ $T/$f.py $T/methods/rasch/$f.py; done
for f in test_iat test_iat_stats test_iat_integration; do mv_ $T/$f.py $T/methods/iat/$f.py; done
for f in test_dif_extract test_dif_integration test_dif_items test_dif_method test_dif_stats; do mv_ $T/$f.py $T/methods/dif/$f.py; done
for f in test_counterfactual_method test_counterfactual_metrics test_counterfactual_stats test_counterfactual_templates test_counterfactual_design_tests; do mv_ $T/$f.py $T/methods/counterfactual/$f.py; done
# import paths and file paths in code, configs, docs and pipeline files
git ls-files -z -- '*.py' '*.yaml' '*.yml' '*.md' '*.toml' '*.cfg' '.dvc/config' 'Makefile' '.ci/*' \
  | xargs -0 python3 "$HERE/restructure_rewrite.py"
# test helpers go next to their only users
mv_ tests/irt_simulation.py tests/methods/rasch/irt/irt_simulation.py
sed -i 's/jinja2.PackageLoader("audit", "templates")/jinja2.PackageLoader("audit.methods.rasch.report", "templates")/' src/audit/methods/rasch/report/html.py
sed -i 's/    for folder in ("conf", "data", "src"):/    for folder in ("data", "src"):/' tests/cli/test_dvc_pipeline.py
# Done by hand in the same commit (see `git show` of commit 1 on branch restructure):
# - src/audit/errors.py: AuditError moved out of methods/rasch/stages.py (which imports it back);
#   `from audit.methods.rasch.stages import AuditError` -> `from audit.errors import AuditError`.
# - __init__.py (one docstring line) for llm/, tracking/, stats/, cli/, methods/{rasch,rasch/report,iat,dif,counterfactual}/.
# - forwarders src/audit/{fit,iat,judge_eval,runs,params,stages}.py: `from audit.cli.X import main`.
# - CONF_DIR: src/audit/__main__.py -> Path(__file__).parent / "conf"; cli/judge_eval.py -> parents[1] / "conf";
#   .dvc/config config_dir = src/audit/conf; pyproject package-data gains conf/**.yaml and the template's new folder.
# - tests: Path(__file__).resolve().parents[1] -> parents[<depth>]; test_backends_servers cwd likewise.
