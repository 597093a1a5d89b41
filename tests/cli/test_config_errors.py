"""A typo in an override is one line that names what would have been valid."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.cli.params import compose_params
from audit.config_ranges import ConfigValueError
from audit.methods.configs import register_configs
from audit.config_errors import HYDRA_ERRORS, describe
from audit.hydra_errors import run_folder_problem
from audit.config_keys import paths_ending_in, valid_keys

register_configs()
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def _error_for(override: str) -> str:
    with pytest.raises(HYDRA_ERRORS) as caught:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            compose("config", overrides=[override])
    return describe(caught.value, Path(CONF_DIR))


@pytest.mark.parametrize(("override", "expected"), [
    ("model=smolm2", "unknown option 'smolm2' for config group 'model'; valid: ollama_llama3, "
                     "qwen_coder_0_5b, qwen_coder_1_5b, smollm2, smollm2_greedy, vllm (did you "
                     "mean 'smollm2'?)"),
    ("model=[smollm2,smolm2]", "unknown option 'smolm2' for config group 'model'; valid: "
                               "ollama_llama3, qwen_coder_0_5b, qwen_coder_1_5b, smollm2, "
                               "smollm2_greedy, vllm"),
    ("+sweep=modelz", "unknown option 'modelz' for config group 'sweep'; valid: domains, fits, "
                      "judges, models, personas (did you mean 'models'?)"),
    ("design.replicatez=2", "unknown key 'design.replicatez'; valid keys under 'design': "
                            "replicates, seed, adaptive, max_prompts, max_tokens_budget, "
                            "max_answer_minutes, round_prompts, futility, futility_from "
                            "(did you mean 'replicates'?)"),
    ("model.qwen_coder_0_5b.sampling.temprature=1",
     "unknown key 'model.qwen_coder_0_5b.sampling.temprature'; valid keys under "
     "'model.qwen_coder_0_5b.sampling': temperature, top_p, max_tokens, repeat_penalty "
     "(did you mean 'temperature'?)"),
    ("modle=smollm2", "did you mean 'model'?"),
    # Bug caught: a right key in the wrong place got no hint (`python -m audit.plan
    # from_run=RUN`, as issue 34 writes it, is plan.from_run), and `seed=3` was offered the
    # group `sweep`, the closest name of its level.
    ("from_run=x", "(add them with +GROUP=OPTION) (did you mean 'plan.from_run'?)"),
    ("seed=3", "(did you mean one of design.seed, dif.seed, fit.seed, iat.seed, plan.seed?)"),
    ("fit.replicates=2", "(did you mean one of design.replicates, plan.replicates?)"),
    # Bug caught: a name that begins one option's was too short for difflib's similarity cut
    # (only the backend registry had matched prefixes).
    ("judge=openai", "smollm2_panel (did you mean 'openai_gpt4o_mini'?)"),
    ("design.replicates=abc", "invalid value for 'design.replicates': Value 'abc' of type 'str' "
                              "could not be converted to Integer"),
    ("items=[a", "cannot parse an override"),
    # Bug caught: a value with a letter outside ASCII read "cannot parse an override:
    # LexerNoViableAltException: ...", naming the lexer and not the quotes that fix it.
    ("judge.name=Zoë", "'judge.name=Zoë': 'ë' is read only inside quotes: quote the value, "
                       "judge.name='Zoë'"),
    ("items.item_ids=[hiring_01,é]", "quote each element that holds it, "
                                     "items.item_ids=[hiring_01,'é']"),
    # Bug caught: a bare file name (`python -m audit.ingest answers.csv`) read as Hydra's
    # "extraneous input '/' expecting {EQUAL, ...}", a grammar message, not what to type.
    ("/tmp/answers.csv", "argument '/tmp/answers.csv' is not key=value: each argument sets one "
                         "config entry, as in model=smollm2 or ingest.input=answers.csv"),
    ("smollm2", "argument 'smollm2' is not key=value"),
    # Design review 2026-11-29, finding 11: the null generator typed unquoted is YAML's null,
    # and the line did not say to quote it.
    ("personas.generators=[baseline,explicit,null]",
     "quote the null generator's name, which unquoted means no value: "
     "'personas.generators=[baseline,explicit,\"null\"]'"),
    ("fit=rasch,rasch_seed", "add -m (--multirun) to sweep"),
    # Bad-input review 2026-12-01: a setting of a model the run does not audit read as
    # "Key 'vllm' is not in struct", as if vllm were no model at all.
    ("model.vllm.base_url=x", "unknown key 'model.vllm': this run's model has qwen_coder_0_5b; "
                              "to audit vllm, choose it first: model=vllm (or "
                              "model=[qwen_coder_0_5b,vllm] beside them), then set its keys"),
    ("model.qwen_coder_05b.timeout_s=3", "no conf/model/qwen_coder_05b.yaml to choose it from "
                                         "(write one: docs/models.md) (did you mean "
                                         "'qwen_coder_0_5b'?)"),
    # Bad-input review 2026-12-04: one value for a list read "str is not a ListConfig, list or
    # tuple" (in a file, "AnyNode is not ...").
    ("items.item_ids=hiring_01", "'items.item_ids' takes a list, not one value: write it in "
                                 "brackets, items.item_ids=[hiring_01] (in a config file "
                                 "`item_ids: [hiring_01]`)"),
    # Bug caught: a model added key by key read "invalid value for 'extra': Invalid type
    # assigned: dict is not a subclass of ModelConfig", naming no model file and no fix.
    ("+model.extra.backend=ollama", "'+model.extra.backend=ollama' cannot add model 'extra' "
                                    "from the command line: write conf/model/extra.yaml "
                                    "(docs/models.md) and choose it with model=extra"),
    ("+model.vllm.backend=ollama", "cannot add model 'vllm' from the command line: choose it "
                                   "with model=vllm (model=[CURRENT,vllm] keeps the others), "
                                   "then set its keys without the +"),
    ("+judge.models.extra.backend=ollama", "cannot add judge.models 'extra' from the command "
                                           "line: a judge's models are written under `models:` "
                                           "in conf/judge/NAME.yaml"),
    # ...and only a new one: a wrong value in a chosen model keeps OmegaConf's line (review).
    ("model.qwen_coder_0_5b.sampling=3", "invalid value for 'model.qwen_coder_0_5b.sampling': "
                                         "Invalid type assigned: int is not a subclass of "
                                         "SamplingConfig"),
])
def test_each_kind_of_typo_is_one_line_naming_the_valid_options(override: str, expected: str):
    message = _error_for(override)
    assert "\n" not in message
    assert expected in message


@pytest.mark.parametrize(("overrides", "expected"), [
    (["+sweep=models", "+sweep=judges"], "sweep is chosen more than once on the command line: "
                                         "list them in one, +sweep=[A,B]"),
    (["model=smollm2", "+model=vllm"], "model is chosen more than once on the command line: "
                                       "list them in one, model=[A,B]"),
    (["items=smoke", "+items=full"], "items is chosen more than once on the command line: it "
                                     "takes one (to run several, sweep them: -m items=A,B)"),
])
def test_a_group_chosen_twice_is_one_line_saying_how_to_choose_several(overrides, expected):
    """Bug caught: Hydra's line, "Multiple values for sweep. To override a value use 'override
    sweep: judges'", gives the fix for a defaults list, which a command line has none of. The
    line is read from the command line: a group a config file chooses again keeps Hydra's."""
    with pytest.raises(HYDRA_ERRORS) as caught:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            compose("config", overrides=overrides)
    assert describe(caught.value, Path(CONF_DIR), overrides) == expected


def test_an_interpolation_of_no_key_says_what_a_dollar_brace_does(tmp_path: Path):
    """Bug caught: `design.seed=${oops}` read only "Interpolation key 'oops' not found", and in
    a model file it named neither the setting nor what ${...} means."""
    line = _only_line(_audit("design.seed=${oops}", "tracking=none", cwd=tmp_path))
    assert line == ("config error: Interpolation key 'oops' not found: a ${...} in a value names "
                    "another key of the config (as in design.seed=${fit.seed}); name a key it "
                    "has, or write the value itself")
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "mine.yaml").write_text(
        "mine:\n  backend: ollama\n  model: ${nothere}\n")
    line = _only_line(_audit("model=mine", "judge=rules_only", "tracking=none", cwd=tmp_path))
    assert line.startswith("config error: 'model.mine.model': Interpolation key 'nothere' not "
                           "found: a ${...} in a value")


def test_a_group_a_sweep_file_chooses_again_keeps_hydras_advice(tmp_path: Path):
    """Review finding: a user's sweep file whose defaults choose `/model: smollm2` (config.yaml
    chooses a model too) read "model is chosen more than once on the command line", which it
    was not; Hydra's "use 'override model: ...'" is the fix there."""
    (tmp_path / "conf" / "sweep").mkdir(parents=True)
    (tmp_path / "conf" / "sweep" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - /model: smollm2\n")
    line = _only_line(_audit("+sweep=mine", "tracking=none", cwd=tmp_path))
    assert "on the command line" not in line and "override" in line, line


def test_valid_keys_follow_the_schema_through_dict_fields():
    assert valid_keys(["design"]) == ["replicates", "seed", "adaptive", "max_prompts",
                                      "max_tokens_budget", "max_answer_minutes",
                                      "round_prompts", "futility", "futility_from"]
    assert "temperature" in valid_keys(["model", "any_name", "sampling"])
    assert valid_keys(["model"]) is None  # any model name is valid there
    assert valid_keys(["nope"]) is None


@dataclasses.dataclass
class _Inner:
    x: int = 0


@dataclasses.dataclass
class _Outer:
    """Each way a section can hold another: a section, an optional one, a list and a dict."""

    section: _Inner = dataclasses.field(default_factory=_Inner)
    optional: _Inner | None = None
    listed: list[_Inner] = dataclasses.field(default_factory=list)
    named: dict[str, _Inner] = dataclasses.field(default_factory=dict)
    x: int = 0


def test_the_paths_of_a_key_run_through_sections_and_optional_sections_only():
    """Bug it guards: a path through a list or dict field (`listed.x`, `named.x`) is no key a
    user can write, as the name or index in its middle is missing; an optional section's keys
    (`optional.x`) are. Shortest paths come first."""
    assert paths_ending_in("x", _Outer) == ["x", "optional.x", "section.x"]
    assert paths_ending_in("nothing", _Outer) == []


def _audit(*arguments: str, module: str = "audit",
           cwd: Path = PROJECT_ROOT) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    return subprocess.run([sys.executable, "-m", module, *arguments], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)


def _only_line(done: subprocess.CompletedProcess) -> str:
    """The one line a refused command printed, after checking that it printed one, exit 2."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    return lines[0]


def test_the_command_line_prints_exactly_one_line_and_exits_2():
    done = _audit("model=smolm2", "tracking=none")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert ("valid: ollama_llama3, qwen_coder_0_5b, qwen_coder_1_5b, smollm2, smollm2_greedy, "
            "vllm" in lines[0])


@pytest.mark.parametrize("module", ["audit", "audit.plan", "audit.judge_eval"])
def test_a_key_added_with_plus_that_no_schema_has_is_one_line_and_exit_2(module: str,
                                                                        tmp_path: Path):
    """`+judge.decodng=json` (what Hydra's own advice, "use +", leads to for a typo) composes,
    and the schema refuses it inside Hydra's job, which printed `Error executing job with
    overrides: [...]` before the config error's line. Hydra has made the job's directory
    (`outputs/DATE/TIME/`, from where the command ran) by then, and left it behind with its
    config copies and an empty log: one for every typo, until 2026-12-01."""
    done = _audit("+judge.decodng=json", "tracking=none", module=module, cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("config error: unknown key 'judge.decodng'")
    assert "did you mean 'decoding'?" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_a_value_out_of_its_range_leaves_no_run_directory(tmp_path: Path):
    """The range checks refuse inside the job too (ConfigValueError, logged by the entry point
    after the directory is gone). Bug caught: only the key errors cleaned up."""
    done = _audit("fit.hdi_prob=1.5", "tracking=none", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "fit.hdi_prob=1.5 must lie in (0, 1)" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_refused_config_keeps_a_run_directory_that_holds_work(tmp_path: Path):
    """Bugs caught: the cleanup above removing a directory that held more than Hydra's copies,
    as when a run's directory is named again (hydra.run.dir=...) to resume it, or removing the
    directory the command ran in."""
    run_dir = tmp_path / "run"
    (run_dir / "fit").mkdir(parents=True)
    (run_dir / "responses.parquet").write_bytes(b"finished work")
    done = _audit("+judge.decodng=json", "tracking=none", f"hydra.run.dir={run_dir}",
                  cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert (run_dir / "responses.parquet").read_bytes() == b"finished work"
    # ...and the refused command's .hydra/ is not left beside work it did not make (the folder
    # had no record: a `dvc repro` or older run's).
    assert (run_dir / "fit").is_dir() and not (run_dir / ".hydra").exists()
    # The working directory itself (hydra.run.dir=.), empty but the user's, is never removed.
    here = tmp_path / "here"
    here.mkdir()
    done = _audit("+judge.decodng=json", "tracking=none", "hydra.run.dir=.", cwd=here)
    assert done.returncode == 2, done.stderr
    assert here.is_dir() and not (here / ".hydra").exists()  # left as it was


def test_a_second_entry_point_in_one_process_still_gets_one_line(monkeypatch):
    """one_line_config_errors set HYDRA_FULL_ERROR=1 for its own use and left it set, so the
    next entry point in the same process (a notebook, a script calling two commands) read it
    as the user's wish and raised the traceback instead of the line."""
    from audit.config_errors import one_line_config_errors

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    for _ in range(2):
        with pytest.raises(SystemExit) as ended, one_line_config_errors(Path(CONF_DIR)):
            with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
                compose("config", overrides=["model=smolm2"])
        assert ended.value.code == 2
    assert "HYDRA_FULL_ERROR" not in os.environ


def test_a_value_on_an_open_upper_bound_is_one_line_and_exit_2(tmp_path):
    """review2 tests.md finding 7: fit.hdi_prob=1 (the HDI of every draw, a gate that cannot
    fail) lies outside (0, 1); a range check that ignored its open upper end let it run. The
    run's model is the scripted fake backend, so a check that lets it through answers in
    seconds and writes the store, never loading a real model."""
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "fake_a.yaml").write_text(
        "fake_a:\n  backend: fake\n  model: fake-a\n")
    env = {key: value for key, value in os.environ.items() if key != "HYDRA_FULL_ERROR"}
    done = subprocess.run(
        [sys.executable, "-m", "audit", "fit.hdi_prob=1", "model=fake_a", "judge=rules_only",
         "tracking=none", "items=smoke", "personas=smoke", f"paths.output_dir={tmp_path / 'out'}",
         f"paths.response_store={tmp_path / 'store.sqlite3'}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**env, "PYTHONPATH": str(PROJECT_ROOT / "src")})
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "fit.hdi_prob=1.0 must lie in (0, 1)" in lines[0], done.stderr
    assert not (tmp_path / "store.sqlite3").exists()

def test_the_judge_evaluation_gets_the_same_one_line_errors():
    done = _audit("judge=smolm2", module="audit.judge_eval")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "judge" in lines[0] and "smollm2" in lines[0], done.stderr


def test_a_typo_in_a_sweep_stops_it_before_any_job_runs(tmp_path):
    done = _audit("-m", "model=smollm2,smolm2", "tracking=none", f"hydra.sweep.dir={tmp_path}")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "did you mean 'smollm2'?" in lines[0], done.stderr
    assert not list(tmp_path.glob("*/prompts.parquet"))


def test_previewing_a_sweep_with_cfg_is_one_line_naming_how():
    """Bug caught (docs review 2026-12-02): `-m +sweep=fits --cfg job` was Hydra's ValueError, a
    12-line traceback; the line names the previews that work, and the first of them works."""
    done = _audit("-m", "+sweep=fits", "--cfg", "job")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "--cfg hydra -p hydra.sweeper.params" in lines[0]
    grid = _audit("+sweep=fits", "--cfg", "hydra", "-p", "hydra.sweeper.params")
    assert grid.returncode == 0 and "fit: rasch,rasch_seed" in grid.stdout, grid.stderr


def test_hydra_full_error_still_gives_the_full_traceback():
    env = {**os.environ, "HYDRA_FULL_ERROR": "1"}
    done = subprocess.run([sys.executable, "-m", "audit", "model=smolm2"], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode != 0 and "Traceback" in done.stderr


FLAT_MODEL = "backend: openai_compatible\nmodel: my-model\nbase_url: http://127.0.0.1:8000/v1\n"


NAMED_MODEL = ("{name}:\n  backend: openai_compatible\n  model: my-model\n"
               "  base_url: http://127.0.0.1:9/v1\n")


@pytest.mark.parametrize(("files", "chosen", "named", "fix"), [
    ({"mine": "mine", "mine_copy": "mine"}, "[mine,mine_copy]", "'mine'",
     "make it `mine_copy:` in conf/model/mine_copy.yaml"),
    # A file named for the user's model whose key is a shipped model's name: that model's
    # settings were replaced without a word.
    ({"mine": "qwen_coder_0_5b"}, "[mine,qwen_coder_0_5b]", "'qwen_coder_0_5b'",
     "make it `mine:` in conf/model/mine.yaml"),
])
def test_two_chosen_model_files_that_name_one_model_are_refused(tmp_path, files, chosen, named,
                                                                fix):
    """Bug caught (own-model review 2026-12-02): a model file copied without renaming its first
    line merged with the original: `model=[mine,mine_copy]` audited one model, the copy's."""
    (tmp_path / "conf" / "model").mkdir(parents=True)
    for name, key in files.items():
        (tmp_path / "conf" / "model" / f"{name}.yaml").write_text(NAMED_MODEL.format(name=key))
    done = _audit(f"model={chosen}", "judge=rules_only", "tracking=none", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"both define the model {named}" in done.stderr
    assert "where 2 were chosen" in done.stderr and fix in done.stderr
    assert not list(tmp_path.glob("outputs/*/*/prompts.parquet"))


@pytest.mark.parametrize(("group", "content", "chosen", "module"), [
    ("items", "", "items=mine", "audit"),
    ("judge", "# the judge I will use\n", "judge=mine", "audit.plan"),
    ("model", "", "model=[qwen_coder_0_5b,mine]", "audit"),
    # Review 2026-12-04: audit.params wrote the whole bank's params.yaml for an empty file, and
    # a list choice, which Hydra records no choice for, passed.
    ("items", "", "items=mine", "audit.params"),
    ("items", "", "items=[mine]", "audit.params"),
])
def test_a_chosen_config_file_with_no_settings_is_one_line_naming_it(tmp_path, group, content,
                                                                     chosen, module):
    """Bug caught (noticed 2026-12-04): Hydra reads an empty group file as an empty mapping, so
    `items=mine` with an empty conf/items/mine.yaml audited the shipped bank without a word, and
    an empty model file in a list of two audited the other model alone."""
    (tmp_path / "conf" / group).mkdir(parents=True)
    (tmp_path / "conf" / group / "mine.yaml").write_text(content)
    done = _audit(chosen, "tracking=none", module=module, cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].endswith(f"conf/{group}/mine.yaml holds no settings, so choosing it "
                             f"({group}=mine) would set nothing: write its settings (the files "
                             f"in src/audit/conf/{group}/ show them), or leave it out of the "
                             f"command line")
    assert [path.name for path in tmp_path.iterdir()] == ["conf"]


@pytest.mark.parametrize("preview", [["--cfg", "job"], ["--info", "config"]])
def test_a_preview_of_an_empty_chosen_file_is_refused_too(tmp_path, preview):
    """Bug caught (noted 2026-12-05): `items=mine --cfg job` with an empty conf/items/mine.yaml
    printed the shipped bank's settings without a word, since the empty-file check runs in the
    command, which a preview never starts; the run itself was refused."""
    (tmp_path / "conf" / "items").mkdir(parents=True)
    (tmp_path / "conf" / "items" / "mine.yaml").write_text("")
    done = _audit("items=mine", *preview, cwd=tmp_path)
    assert done.returncode == 2 and "default" not in done.stdout, done.stdout
    assert done.stderr.strip().splitlines()[-1] == (
        "config error: conf/items/mine.yaml holds no settings, so choosing it (items=mine) would "
        "set nothing: write its settings (the files in src/audit/conf/items/ show them), or "
        "choose another")


def test_which_command_lines_only_show_a_config():
    """Hydra's previews in every form argparse takes, and flags that run the command."""
    from audit.cli import shows_instead_of_running

    for arguments in (["--cfg", "job"], ["-c", "all"], ["--cfg=job"], ["a=1", "--cf", "job"],
                      ["--info"], ["-i", "defaults"], ["--help"], ["-h"], ["--hydra-help"]):
        assert shows_instead_of_running(arguments), arguments
    for arguments in ([], ["a=1"], ["-m", "+sweep=fits"], ["-cp", "dir"], ["-cn", "name"],
                      ["--config-name", "x"], ["-p", "items"], ["--multirun"], ["--run"]):
        assert not shows_instead_of_running(arguments), arguments


def test_an_empty_file_in_place_of_a_default_and_a_group_given_null_are_one_line(tmp_path):
    """Review 2026-12-04: an empty conf/items/default.yaml, which replaces the shipped default
    without being chosen, was told to "leave items=default out", an override nobody wrote; an
    empty file a defaults list chose was called a shipped one; and `items=null` was Hydra's
    ValueError traceback (`model=[a,null]` its TypeError's)."""
    def one_line(*arguments: str, module: str = "audit.params") -> str:
        done = _audit(*arguments, "tracking=none", module=module, cwd=tmp_path)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        return lines[0]

    (tmp_path / "conf" / "items").mkdir(parents=True)
    (tmp_path / "conf" / "items" / "default.yaml").write_text("# mine, later\n")
    assert one_line("fit.draws=100", module="audit.plan").endswith(
        "conf/items/default.yaml holds no settings, and it takes the place of the shipped "
        "items=default, so items=default would set nothing: write its settings "
        "(src/audit/conf/items/default.yaml shows them), or delete it to use the shipped one")
    (tmp_path / "conf" / "items" / "default.yaml").unlink()
    (tmp_path / "conf" / "items" / "mine.yaml").write_text("")
    (tmp_path / "conf" / "sweep").mkdir()
    (tmp_path / "conf" / "sweep" / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - override /items: mine\n")
    assert one_line("+sweep=mine", module="audit").endswith(
        "conf/items/mine.yaml holds no settings, so choosing it (items=mine) would set nothing: "
        "write its settings (the files in src/audit/conf/items/ show them), or choose another "
        "in your defaults list")
    for override, group in [("items=null", "items"), ("model=[qwen_coder_0_5b,null]", "model")]:
        assert one_line(override, module="audit") == (
            f"config error: {override}: a config group takes the names of its options (the "
            f"files of conf/{group}/), not null; leave the override out for the default")


def test_a_model_file_written_flat_is_one_line_showing_the_nested_shape(tmp_path):
    """A model file must nest its settings under the model's name; written flat it failed with
    `Invalid type assigned: str is not a subclass of ModelConfig ... full_key: model.backend`."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "my_server.yaml").write_text(FLAT_MODEL)
    done = _audit(f"hydra.searchpath=[file://{tmp_path}]", "model=my_server", "tracking=none")
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0] == (
        "config error: conf/model/my_server.yaml sets 'backend' at the top of the file, but a "
        "model file nests its settings under the model's name: make the first line "
        "`my_server:` and indent every setting under it (`my_server:` / `  backend: "
        "openai_compatible` / `  model: ...`), as src/audit/conf/model/vllm.yaml does")
    # The shape the line shows composes.
    nested = "my_server:\n" + "".join(f"  {line}\n" for line in FLAT_MODEL.splitlines())
    (tmp_path / "model" / "my_server.yaml").write_text(nested)
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        cfg = compose("config", overrides=[f"hydra.searchpath=[file://{tmp_path}]",
                                           "model=my_server"])
    assert cfg.model.my_server.backend == "openai_compatible"


def test_a_judge_file_with_an_unnamed_model_names_where_the_name_goes(tmp_path):
    (tmp_path / "judge").mkdir()
    (tmp_path / "judge" / "mine.yaml").write_text("name: mine\nmodels:\n  backend: fake\n")
    with pytest.raises(HYDRA_ERRORS) as caught:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            compose("config", overrides=[f"hydra.searchpath=[file://{tmp_path}]", "judge=mine"])
    assert describe(caught.value, Path(CONF_DIR)) == (
        "conf/judge/mine.yaml sets 'backend' directly under 'judge.models', which holds "
        "ModelConfig entries by name: put the settings under a name (`models:` / `  NAME:` / "
        "`    backend: ...`)")


@pytest.mark.parametrize(("folder", "text", "module", "expected"), [
    ("model", "broken:\n  backend: fake\n  model: fake-a\n  sampling: {temperature: 0.0\n",
     "audit", "conf/model/broken.yaml is not valid YAML (line 4, column 13: while parsing a flow "
              "mapping, expected ',' or '}', but got '<stream end>' at line 5, column 1): fix "
              "the file"),
    ("judge", "name: tabbed\nuse_rules: true\nmodels:\n\tm:\n", "audit.ingest",
     "conf/judge/tabbed.yaml is not valid YAML (line 4, column 1: found character '\\t' that "
     "cannot start any token; YAML indents with spaces, not tabs): fix the file"),
])
def test_a_users_config_file_that_is_not_yaml_is_one_line_naming_the_file(
        tmp_path: Path, folder: str, text: str, module: str, expected: str):
    """Bug caught: a file in the user's ./conf with an unclosed `{` (or a tab in its indentation)
    was a 100-line traceback ending in yaml's ParserError, exit 1: Hydra raises the YAML error
    unwrapped, so the one-line mechanism never saw it."""
    (tmp_path / "conf" / folder).mkdir(parents=True)
    name = Path(expected.split()[0]).stem
    (tmp_path / "conf" / folder / f"{name}.yaml").write_text(text)
    done = _audit(f"{folder}={name}", *([] if folder == "judge" else ["judge=rules_only"]),
                  "input=answers.csv" if module == "audit.ingest" else "tracking=none",
                  module=module, cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert lines[0] == f"config error: {expected}"


MINE = "mine:\n  backend: ollama\n  model: llama3  # café\n"


@pytest.mark.parametrize(("content", "module", "expected"), [
    (MINE.encode("utf-16"), "audit",
     "conf/model/mine.yaml cannot be read: it is UTF-16 text, as PowerShell's `>` writes; save "
     "it as UTF-8 (PowerShell: `| Out-File -Encoding utf8`)"),
    (MINE.encode("latin-1"), "audit.ingest",
     "conf/model/mine.yaml cannot be read: it is not UTF-8 text (byte 0xe9: Latin-1 or another "
     "legacy encoding); save it as UTF-8 (PowerShell: `| Out-File -Encoding utf8`)"),
    (b"mine: &x [*x]\n", "audit",
     "conf/model/mine.yaml cannot be read: an alias in it contains itself (like `a: &x [*x]`), "
     "or it nests too deep; fix the file"),
], ids=["utf16", "latin1", "recursive"])
def test_a_users_config_file_that_is_not_utf8_or_recurses_is_one_line_naming_the_file(
        tmp_path: Path, content: bytes, module: str, expected: str):
    """Bugs caught: a model file written by PowerShell's `>` (UTF-16) or saved in Latin-1 was
    Hydra's traceback ending in UnicodeDecodeError, exit 1, naming no file; one whose alias
    contains itself was a RecursionError 2,800 lines long. The file is found among the user's
    ./conf (Hydra's error does not name it). A file no run chose, earlier in the folder and
    not UTF-8 either, is not the one named (a search of the folder named it)."""
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "mine.yaml").write_bytes(content)
    (tmp_path / "conf" / "model" / "aaa_notes.yaml").write_bytes(b"notes: caf\xe9\n")
    done = _audit("model=mine", "judge=rules_only",
                  "input=answers.csv" if module == "audit.ingest" else "tracking=none",
                  module=module, cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0] == f"config error: {expected}"


def test_a_config_file_on_another_search_path_that_is_not_utf8_is_named(tmp_path: Path):
    """Bug caught: a file on a folder added with hydra.searchpath (not ./conf) read "a config
    file cannot be read", naming none."""
    (tmp_path / "shared" / "model").mkdir(parents=True)
    (tmp_path / "shared" / "model" / "mine.yaml").write_bytes(MINE.encode("utf-16"))
    done = _audit("model=mine", "judge=rules_only", "tracking=none",
                  f"hydra.searchpath=[file://{tmp_path / 'shared'}]", cwd=tmp_path)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("config error: shared/model/mine.yaml cannot be read: it is "
                               "UTF-16 text"), lines[0]


def test_a_yaml_error_raised_outside_hydras_config_loading_keeps_its_traceback(monkeypatch):
    """A YAML error that Hydra did not raise while reading a config file may be a bug: it is
    not turned into a config error's line."""
    from audit.config_errors import one_line_config_errors

    monkeypatch.delenv("HYDRA_FULL_ERROR", raising=False)
    with pytest.raises(yaml.YAMLError), one_line_config_errors(Path(CONF_DIR)):
        yaml.safe_load("a: {b: 1\n")
    with pytest.raises(UnicodeDecodeError), one_line_config_errors(Path(CONF_DIR)):
        b"\xff".decode("utf-8")


def test_a_typo_in_a_model_file_names_the_file_the_valid_keys_and_the_likely_key(tmp_path):
    """Bug caught: `baseurl:` for `base_url:` in a model file read `In 'model/typo':
    ConfigKeyError raised while composing config:; Key 'baseurl' not in 'ModelConfig'; ...`,
    with no valid keys and no suggestion, which the same typo as an override had: Hydra raises
    a file's error without `from`, so the key error is the composition error's __context__."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "typo.yaml").write_text(
        "typo:\n  backend: openai_compatible\n  model: m\n  baseurl: http://127.0.0.1:9/v1\n")
    with pytest.raises(HYDRA_ERRORS) as caught:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            compose("config", overrides=[f"hydra.searchpath=[file://{tmp_path}]",
                                         "model=typo"])
    message = describe(caught.value, Path(CONF_DIR))
    assert message.startswith("unknown key 'model.typo.baseurl' in conf/model/typo.yaml; valid "
                              "keys under 'model.typo': backend, model, "), message
    assert message.endswith("(did you mean 'base_url'?)") and "\n" not in message
    # The override's line, which the file's now matches, is unchanged.
    assert _error_for("model.qwen_coder_0_5b.baseurl=x").startswith(
        "unknown key 'model.qwen_coder_0_5b.baseurl'; valid keys under "
        "'model.qwen_coder_0_5b': backend, model, ")


GRID = "hydra:\n  sweeper:\n    params:\n      items.item_ids: '[hiring_01],[lending_01]'\n"


@pytest.mark.parametrize(("content", "expected"), [
    ("# @package _global_\n" + GRID,
     "the config sets a sweep's grid (hydra.sweeper.params: items.item_ids) but runs once "
     "(hydra.mode RUN), which ignores it: run with -m, or give the sweep file `mode: MULTIRUN` "
     "under `hydra:`"),
    (GRID.replace("hydra:\n", "hydra:\n  mode: MULTIRUN\n"),
     "conf/sweep/mine.yaml lacks its first line, `# @package _global_`, so its keys went under "
     "'sweep': a sweep file starts with the line `# @package _global_` and sets "
     "hydra.sweeper.params"),
    ("# a grid, one day\n",
     "conf/sweep/mine.yaml holds no settings: a sweep file starts with the line"),
], ids=["no-multirun", "no-package-line", "empty"])
def test_a_users_sweep_file_missing_a_part_says_which(tmp_path: Path, content: str,
                                                      expected: str):
    """Bugs caught (bad-input review 2026-12-04): a sweep file without `mode: MULTIRUN` ran the
    base config once, ignoring its grid, and said nothing; one without the `# @package
    _global_` line, or empty, read "unknown key 'sweep' ... (did you mean 'sweep'?)"."""
    (tmp_path / "conf" / "sweep").mkdir(parents=True)
    (tmp_path / "conf" / "sweep" / "mine.yaml").write_text(content)
    done = _audit("+sweep=mine", "judge=rules_only", "tracking=none", cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if "ERROR" in line or "error:" in line]
    assert len(errors) == 1 and expected in errors[0], done.stderr[-3000:]


def test_an_unknown_option_run_where_there_is_no_conf_folder_says_where_options_come_from(
        tmp_path: Path):
    """Bug caught (bad-input review 2026-12-04): run from a subfolder of the project, the
    user's own `model=mine` was an unknown option, with no word that ./conf is read from the
    folder the command runs in. A near miss of a shipped option gets its hint instead."""
    done = _audit("model=mine", "tracking=none", cwd=tmp_path)
    assert done.returncode == 2
    assert (f"; there is no conf/ folder in {tmp_path}: your own config files are read from "
            f"conf/model/ of the folder you run from") in done.stderr, done.stderr
    (tmp_path / "conf").mkdir()
    done = _audit("model=mine", "tracking=none", cwd=tmp_path)
    assert done.returncode == 2 and "no conf/ folder" not in done.stderr, done.stderr


def test_a_group_the_command_does_not_read_is_not_to_be_added_with_a_plus():
    """Bug caught (bad-input review 2026-12-04): `audit.judge_eval items=smoke` said "To append
    to your default list use +items=smoke", and with the + the command ran, ignoring it. A
    group no command reads by default (`sweep`) keeps Hydra's advice: + is its fix."""
    with pytest.raises(HYDRA_ERRORS) as caught:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            compose("judge_eval", overrides=["items=smoke"])
    assert describe(caught.value, Path(CONF_DIR)) == (
        "this command does not read 'items' (its config chooses no items): leave the items= "
        "override out; with +items= it would be added and ignored")
    assert "use +sweep=models" in _error_for("sweep=models")


def test_a_group_only_the_users_conf_has_keeps_hydras_plus_advice(tmp_path: Path):
    """Review 2026-12-04: `python -m audit design=three` with the user's conf/design/three.yaml
    was told the command does not read 'design'; `+design=three` is what works."""
    (tmp_path / "design").mkdir()
    (tmp_path / "design" / "three.yaml").write_text("replicates: 3\n")
    message = _error_for_searching(tmp_path, "design=three")
    assert "use +design=three" in message and "does not read" not in message, message


def _error_for_searching(folder: Path, override: str) -> str:
    with pytest.raises(HYDRA_ERRORS) as caught:
        with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
            compose("config", overrides=[f"hydra.searchpath=[file://{folder}]", override])
    return describe(caught.value, Path(CONF_DIR))


@pytest.mark.parametrize("module", ["audit", "audit.plan"])
def test_a_list_of_options_for_a_group_that_takes_one_is_refused_before_any_prompt(
        module: str, tmp_path: Path):
    """Bug caught (bad-input review 2026-12-04): Hydra merges a list of a group's options into
    one section, the last one's settings winning, and nothing was said: `method=[rasch,iat]`
    ran the IAT alone, `fit=[rasch,twopl]` fitted twopl, `items=[smoke,full]` asked all 48
    items. The models and the sweep presets still add up."""
    line = _only_line(_audit("method=[rasch,iat]", "tracking=none", module=module, cwd=tmp_path))
    assert line.endswith("method=[rasch,iat] chooses 2 options of method, which takes one "
                         "(Hydra would merge them into one, the last one's settings "
                         "winning): choose one, or run each in a sweep, python -m audit -m "
                         "method=rasch,iat")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigValueError, match=r"^items=\[smoke,full\] chooses 2 options"):
        compose_params(["items=[smoke,full]"], check_files=True)
    two = compose_params(["model=[qwen_coder_0_5b,smollm2]", "+sweep=[fits,domains]"],
                         check_files=True)
    assert sorted(two.model) == ["qwen_coder_0_5b", "smollm2"]


def test_a_group_removed_on_the_command_line_is_refused_naming_its_options(tmp_path: Path):
    """Bugs caught (bad-input review 2026-12-04): Hydra's delete left the run on the schema's
    defaults without a word: `~items` audited all 48 scenarios of the bank, not the default 12,
    and `~judge` read "invalid value for 'judge.name': Missing mandatory value: name"."""
    line = _only_line(_audit("~judge", "tracking=none", cwd=tmp_path))
    assert line.endswith("~judge removes the run's judge, and every run needs one: leave the "
                         "override out, or choose one with judge=OPTION (logprob, "
                         "openai_gpt4o_mini, qwen_coder_0_5b, qwen_coder_1_5b, rules_only, "
                         "smollm2, smollm2_panel)")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigValueError, match=r"^~items removes the run's items, .* "
                                               r"items=OPTION \(default, discrim_eval, full, "
                                               r"smoke\)$"):
        compose_params(["~items"], check_files=True)
    with pytest.raises(ConfigValueError, match=r"^~design removes a section every run has "):
        compose_params(["~design"], check_files=True)
    # a sweep is optional: removing one is no mistake (review finding)
    assert compose_params(["+sweep=fits", "~sweep"], check_files=True).items.name == "default"
    # a setting is not removable either; its line says to set it
    assert _error_for("~design.seed") == ("~design.seed cannot remove a setting, which every run "
                                          "has: set it instead (design.seed=VALUE), or leave "
                                          "the override out for its default")


def test_running_inside_the_output_folder_is_refused_and_leaves_no_folder(tmp_path: Path):
    """Bug caught (bad-input review 2026-12-04): with hydra.job.chdir=true every relative path
    was read from the run's own folder, so each run opened a new, empty response store and no
    run resumed; ./data and ./conf fell back to the shipped copies without a word."""
    line = _only_line(_audit("hydra.job.chdir=true", "tracking=none", cwd=tmp_path))
    assert line.endswith("hydra.job.chdir=true would run the audit inside its output folder, "
                         "where the relative paths (the response store, ./data, ./conf) "
                         "name other files, so no run would resume: leave hydra.job.chdir "
                         "out (the outputs go to the run folder anyway)")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("override, key, where", [
    ("model.qwen_coder_0_5b.hub.repo=x/y", "model.qwen_coder_0_5b.hub.repo",
     "conf/model/NAME.yaml"),
    ("model.qwen_coder_0_5b.hub={repo:x/y,file:a.gguf,revision:main,sha256:abc}",
     "model.qwen_coder_0_5b.hub", "conf/model/NAME.yaml"),
    ("judge.models.qwen_coder_1_5b.hub.repo=x/y", "judge.models.qwen_coder_1_5b.hub.repo",
     "`models:` of conf/judge/NAME.yaml"),
])
def test_a_key_inside_a_null_setting_is_one_line_naming_it(override: str, key: str, where: str,
                                                             tmp_path: Path):
    """Bug caught (bad-input review 2026-12-04): a model's `hub` is null by default, and
    OmegaConf cannot merge into it: the dotted form was an AssertionError traceback ("Unexpected
    type for root: NoneType"), the whole-mapping form an AttributeError one. The same errors
    raised anywhere else are bugs and keep their tracebacks."""
    from audit.config_keys import under_null_setting

    line = _only_line(_audit(override, "tracking=none", cwd=tmp_path))
    assert line.startswith(f"config error: '{key}': sets a setting that is null by default (a "
                           "model's `hub`), or a key inside it, which cannot be done from the "
                           "command line: write the whole setting in a config file")
    assert line.endswith(f"under the model's name in {where})")
    try:
        raise AssertionError("Unexpected type for root: NoneType")
    except AssertionError as ours:
        assert under_null_setting(ours, [override]) is None


@pytest.mark.parametrize("arguments, flags", [
    (["tracking=none", "-m", "items=smoke"], "-m"),
    (["tracking=none", "--cfg", "job", "items=smoke"], "--cfg job"),
])
def test_overrides_on_both_sides_of_a_flag_are_one_line_saying_where_they_go(
        arguments: list[str], flags: str, tmp_path: Path):
    """Bug caught (bad-input review 2026-12-04): Hydra's argparse reads one run of overrides,
    and `model=x -m items=smoke` was a 7-line usage block ending "unrecognized arguments:
    items=smoke", of an override that was valid. Flags before or after one run still work."""
    from audit.cli import split_overrides

    line = _only_line(_audit(*arguments, cwd=tmp_path))
    assert line == (f"config error: overrides on both sides of {flags}: Hydra reads only the "
                    f"first run of them, so put them all after the flags ({flags} "
                    "KEY=VALUE ...)")
    assert split_overrides(["-m", "a=1", "b=2"]) is None
    assert split_overrides(["a=1", "b=2", "--cfg", "job"]) is None
    assert split_overrides(["a=1", "--cf", "job"]) is None  # argparse takes a flag's prefix
    assert split_overrides(["+sweep=x", "--cfg", "hydra", "-p", "hydra.sweeper.params"]) is None


@pytest.mark.parametrize(("arguments", "expected"), [
    (["hydra.run.dir=taken"], "config error: cannot make the run's folder: taken is a file, not a "
     "folder; set hydra.run.dir= to a folder you can write, or leave it out (outputs/DATE/TIME)"),
    (["hydra.run.dir=taken/run"], "config error: cannot make the run's folder: taken/run: taken "
     "is a file, not a folder; set hydra.run.dir="),
    (["-m", "design.seed=1,2", "hydra.sweep.dir=taken"], "config error: cannot make the run's "
     "folder: taken is a file, not a folder; set hydra.sweep.dir= to a folder you can write, or "
     "leave it out (multirun/DATE/TIME)"),
])
def test_a_run_folder_hydra_cannot_make_is_one_line(tmp_path: Path, arguments, expected):
    """Bug caught (bad-input review 2026-12-06): Hydra's mkdir of hydra.run.dir (or
    hydra.sweep.dir) naming a file raised FileExistsError or NotADirectoryError unwrapped, a
    25-line traceback and exit 1 in every command. The file is left as it was."""
    (tmp_path / "taken").write_text("mine\n")
    assert _only_line(_audit(*arguments, "tracking=none", cwd=tmp_path)).startswith(expected)
    assert (tmp_path / "taken").read_text() == "mine\n"


@pytest.mark.parametrize(("module", "arguments"), [
    ("audit", ["~design", "design.seed=1"]),
    ("audit.plan", ["~plan", "plan.gap=1"]),
])
def test_a_key_set_under_a_section_the_line_deletes_names_the_deletion(tmp_path: Path, module,
                                                                       arguments):
    """Bug caught (bad-input review 2026-12-06): it read "unknown key 'plan'; valid top-level
    keys: ..., plan, ... (did you mean 'plan'?)", sending the user to the key they typed."""
    deleted, setting = arguments
    line = _only_line(_audit(*arguments, "tracking=none", module=module, cwd=tmp_path))
    assert line == (f"config error: {deleted} deletes '{deleted[1:]}' with every setting under "
                    f"it, so {setting} has nowhere to go: leave out {deleted}")


def test_a_number_past_pythons_digit_limit_is_one_line(tmp_path: Path):
    """Bug caught (bad-input review 2026-12-06): Hydra's parser read design.seed=<5,000 nines> as
    an integer past Python's 4,300-digit limit: a ValueError traceback, exit 1."""
    line = _only_line(_audit(f"design.seed={'9' * 5000}", "tracking=none", cwd=tmp_path))
    assert line == ("config error: design.seed= has a number of more than 4,300 digits, which no "
                    "setting takes: give a shorter one")


def test_an_os_error_of_the_job_itself_is_not_read_as_its_run_folder(tmp_path: Path):
    """Hydra's run_job makes the run's folder and then calls the job: an OSError the job raises
    (a full disk, a bug) passes through run_job too, and must keep its traceback, not read as
    "cannot make the run's folder". Fails when any run_job frame on the traceback counts."""
    job = {"__name__": "audit.methods.run"}
    exec("def job():\n    raise FileExistsError(17, 'File exists', 'table.csv')\n", job)
    hydra = {"__name__": "hydra.core.utils", "job": job["job"]}
    exec("def run_job(folder=None):\n    import pathlib\n"
         "    pathlib.Path(folder).mkdir() if folder else job()\n", hydra)
    with pytest.raises(OSError) as raised:
        hydra["run_job"]()
    assert run_folder_problem(raised.value) is None
    (tmp_path / "taken").write_text("mine\n")
    with pytest.raises(OSError) as raised:
        hydra["run_job"](tmp_path / "taken")
    assert run_folder_problem(raised.value).startswith(
        f"cannot make the run's folder: {tmp_path / 'taken'} is a file, not a folder")
