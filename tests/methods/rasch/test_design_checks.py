"""Settings the design stage refuses before any prompt is sent: a judge (or audited model) whose
API key variable is unset, a second outcome coding that repeats the first, and fit.attributes
that the design's personas cannot contrast."""

from __future__ import annotations

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from audit.__main__ import CONF_DIR
from audit.errors import AuditError
from audit.llm.model_sources import check_request_models, models_by_key
from audit.methods.configs import AuditConfig, register_configs, to_audit_config
from audit.methods.rasch.analyse import check_fit_settings
from audit.methods.rasch.design import design_stage
from audit.methods.rasch.score import check_labeller, gold_set_of

register_configs()


def _compose(overrides: list[str]) -> AuditConfig:
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return to_audit_config(compose("config", overrides=["paths.output_dir=out", *overrides]))


def test_a_judge_without_its_api_key_is_refused_at_design(monkeypatch):
    """Bug caught: the judge's backend was built only in the score stage, so an unset
    OPENAI_API_KEY stopped the run after every answer had been bought."""
    from audit.methods.rasch.method import _design

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = _compose(["judge=openai_gpt4o_mini"])
    with pytest.raises(AuditError, match=r"judge.models.gpt4o_mini \(openai_compatible\) .* "
                                         "OPENAI_API_KEY") as error:
        _design(cfg, None, None)  # type: ignore[arg-type]  # fails before it reads them
    assert "\n" not in str(error.value)
    judges = models_by_key(cfg.judge.models, "judge.models")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    check_request_models(judges)  # set: accepted
    monkeypatch.setenv("OPENAI_API_KEY", "")
    with pytest.raises(AuditError, match="OPENAI_API_KEY"):
        check_request_models(judges)  # empty counts as unset, as the backend itself reads it


def test_a_key_variable_on_a_backend_that_reads_none_is_not_required(monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VARIABLE", raising=False)
    cfg = _compose(["model=ollama_llama3", "model.ollama_llama3.api_key_env=NO_SUCH_KEY_VARIABLE"])
    check_request_models(models_by_key(cfg.model))


@pytest.mark.parametrize("method", ["iat", "dif", "counterfactual"])
def test_every_method_checks_its_models_at_design_by_key(method, monkeypatch, tmp_path):
    """Bug caught: only the Rasch design checked the audited models, so an IAT, DIF or
    counterfactual run with a wrong model file or an unset API key stopped in its respond stage
    on a line that named no config key ("this one gives model and path")."""
    from audit.methods import method_module

    design = method_module(method, "method")._design
    cfg = _compose([f"method={method}", f"model.qwen_coder_0_5b.path={tmp_path / 'm.gguf'}",
                    "model.qwen_coder_0_5b.model="])
    with pytest.raises(AuditError, match=r"^model.qwen_coder_0_5b: model file not found"):
        design(cfg, None, None)  # type: ignore[arg-type]  # fails before it reads them
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = _compose([f"method={method}", "model=vllm", "model.vllm.api_key_env=OPENAI_API_KEY"])
    with pytest.raises(AuditError, match=r"^model.vllm \(openai_compatible\) reads its API key"):
        design(cfg, None, None)  # type: ignore[arg-type]


def test_a_second_outcome_that_repeats_the_first_is_refused_at_design():
    """It fitted the same coding twice and reported every contrast twice."""
    from audit.methods.rasch.method import _design

    cfg = _compose(["judge=rules_only", "fit.second_outcome=favourable"])
    with pytest.raises(AuditError, match="fit.second_outcome=favourable is fit.outcome already"):
        _design(cfg, None, None)  # type: ignore[arg-type]
    check_fit_settings(_compose(["fit.second_outcome=undetermined"]))


@pytest.mark.parametrize("override, message", [
    ("fit.drop_labels=[refusl]", r"fit.drop_labels names refusl \(did you mean 'refusal'\?\)"),
    ("fit.item_dif=[race,age]", r"fit.item_dif names age, not among the attributes of "
                                r"fit.attributes: use gender, race"),
])
def test_fit_settings_the_fit_would_refuse_are_refused_at_design(override, message):
    """Bad-input review 2026-12-01: a typo in fit.drop_labels or an attribute fit.item_dif
    cannot fit were refused by the fit, after every prompt had been answered and judged (15
    sent on the smoke design, about 9 minutes on the default), though docs/configuration.md
    promises such refusals before anything is sent. Known names pass."""
    from audit.methods.rasch.method import _design

    with pytest.raises(AuditError, match=message) as error:
        _design(_compose(["judge=rules_only", override]), None, None)  # type: ignore[arg-type]
    assert "\n" not in str(error.value)
    check_fit_settings(_compose(["fit.drop_labels=[refusal,needs_more_information]",
                                 "fit.item_dif=[race]"]))


@pytest.mark.parametrize("model", ["rasch", "twopl", "hurdle"])
def test_item_gaps_for_a_model_without_attribute_effects_are_refused_at_design(model):
    """Docs review 2026-12-02: fit.item_dif with fit=rasch (twopl, hurdle) was ignored without a
    word, and the report had no item gaps. Refused at design; the population model takes it."""
    from audit.methods.rasch.method import _design

    with pytest.raises(AuditError, match=rf"fit.item_dif=\['race'\] needs a model with "
                                         rf"attribute effects, and fit={model} has none: use "
                                         rf"fit=explanatory or fit=population") as error:
        _design(_compose(["judge=rules_only", f"fit={model}", "fit.item_dif=[race]"]),
                None, None)  # type: ignore[arg-type]
    assert "\n" not in str(error.value)
    check_fit_settings(_compose(["fit=population", "fit.item_dif=[race]"]))


def test_a_second_coding_under_the_hurdle_is_refused_at_design():
    """Docs review 2026-12-03: fit=hurdle fit.second_outcome=undetermined dropped the second
    coding without a word (the hurdle's first step models abstaining), after every prompt had
    been answered; docs/methods/rasch.md said the setting works with any model."""
    from audit.methods.rasch.method import _design

    with pytest.raises(AuditError, match=r"fit=hurdle fits deciding .* so "
                                         r"fit.second_outcome=undetermined has nothing to add: "
                                         r"leave fit.second_outcome null, or use "
                                         r"fit=abstention") as error:
        _design(_compose(["judge=rules_only", "fit=hurdle", "fit.second_outcome=undetermined"]),
                None, None)  # type: ignore[arg-type]
    assert "\n" not in str(error.value)
    check_fit_settings(_compose(["fit=hurdle"]))


@pytest.mark.parametrize("override", ["fit.response=probability", "fit=hurdle",
                                      "fit.second_outcome=undetermined"])
def test_fit_settings_an_adaptive_design_cannot_fit_are_refused_at_design(override):
    """Adaptive review 2026-12-02: fit.response=probability with design.adaptive=true was
    refused by the first look's fit, after round 0 had been asked and judged (19 prompts on the
    smoke design, paid on an API); the hurdle and a second coding only by the respond stage.
    Each is refused with the other design settings now; without design.adaptive they pass."""
    from audit.methods.rasch.method import _design

    with pytest.raises(AuditError, match="design.adaptive=true fits one decision outcome"):
        _design(_compose(["judge=rules_only", "design.adaptive=true", override]),
                None, None)  # type: ignore[arg-type]
    check_fit_settings(_compose([override]))


def test_attributes_the_design_lacks_are_refused_at_design(tmp_path):
    """Design review 2026-11-29, finding 5: fit.attributes=[gender,race,age] passed the design
    stage and was refused by the fit, after every prompt had been answered and judged."""
    from audit.methods.rasch.method import StageFiles, _design

    files = StageFiles(tmp_path)
    cfg = _compose(["judge=rules_only", "fit.attributes=[gender,race,age]"])
    with pytest.raises(AuditError, match=r"fit.attributes names \['age'\], which the prompts"):
        _design(cfg, files, None)  # type: ignore[arg-type]
    assert not files.prompts.exists()


def test_a_design_with_no_two_levels_of_an_attribute_is_refused_at_design(tmp_path, caplog):
    """Finding 5: a design whose real personas hold one level of each attribute was found to
    contrast nothing only at the fit. The level test is the adaptive design's
    (explanatory.two_level_attributes), so a blank level is none. A design with no real persona
    at all (the null-only arm of +sweep=personas) asked for no group by its generators: it runs,
    with a warning (the merged review found the shipped preset's third job refused)."""
    from audit.methods.rasch.analyse import check_design_attributes
    from audit.methods.rasch.method import StageFiles, _design

    one_each = _compose(["judge=rules_only", "personas.explicit_ids=[white_man]"])
    with pytest.raises(AuditError, match=r"no attribute of fit.attributes=\['gender', 'race'\] "
                                         r"has two levels .*\(gender: man; race: White\)"):
        _design(one_each, StageFiles(tmp_path), None)  # type: ignore[arg-type]
    placebo = design_stage(_compose(["judge=rules_only", 'personas.generators=[baseline,"null"]']))
    check_design_attributes(placebo, ["gender", "race"])
    assert "contrasts no groups" in caplog.text
    check_design_attributes(placebo, [])  # a run that compares no groups (the item pilot)
    one_race = design_stage(_compose(["personas.explicit_ids=[white_man,white_woman]"]))
    with pytest.raises(AuditError, match=r"\(race: White\)"):
        check_design_attributes(one_race, ["race"])
    caplog.clear()
    check_design_attributes(one_race, ["gender", "race"])  # gender has two levels: fitted
    # Bad-input review 2026-12-04: the attribute left with one level was said only at the fit,
    # after every answer; now at design, before any is sent.
    assert ("fit.attributes names race, but the design's personas hold it at one level (White): "
            "the run makes no race contrast" in caplog.text)
    caplog.clear()
    check_design_attributes(design_stage(_compose([])), ["gender", "race"])
    assert "makes no" not in caplog.text  # the default design contrasts both


def test_a_persona_setting_no_chosen_generator_reads_is_warned_of_at_design(tmp_path, caplog):
    """Bug caught (noticed 2026-12-04): `personas.explicit_file=mine.csv` with
    `personas.generators=[baseline,name]` audited the shipped names and never read mine.csv, and
    nothing said so. A setting left at its default, or read by a chosen generator, is not named
    (the shipped personas=names sets explicit_file to its default; the personas sweep's name job
    runs with it)."""
    mine = tmp_path / "mine.csv"
    mine.write_text("persona_id,descriptor,gender,race\nw,a woman,woman,\nm,a man,man,\n")
    with caplog.at_level("WARNING", logger="audit.methods.rasch.design"):
        prompts = design_stage(_compose([f"personas.explicit_file={mine}",
                                         "personas.explicit_ids=[w]",
                                         "personas.generators=[baseline,name]"]))
    warnings = [record.getMessage() for record in caplog.records]
    assert warnings == [
        f"personas.{setting} is read by the explicit generator, which "
        f"personas.generators=['baseline', 'name'] does not run, so the design has none of its "
        f"personas: add explicit to personas.generators, or leave {setting.split('=')[0]} out"
        for setting in (f"explicit_file={mine}", "explicit_ids=['w']")]
    assert set(prompts["persona_kind"].unique()) == {"baseline", "name"}
    caplog.clear()
    with caplog.at_level("WARNING", logger="audit.methods.rasch.design"):
        design_stage(_compose(["personas=names"]))
        design_stage(_compose([f"personas.explicit_file={mine}"]))
        # Review 2026-12-04: a shipped preset's own settings, in the jobs of +sweep=personas
        # that drop its generator, were named as if the user had set them.
        design_stage(_compose(["personas=smoke", "personas.generators=[baseline,name]"]))
        design_stage(_compose(["personas=discrim_eval", 'personas.generators=[baseline,"null"]']))
    assert caplog.records == []
    with caplog.at_level("WARNING", logger="audit.methods.rasch.design"):
        design_stage(_compose(["personas=smoke", "personas.generators=[baseline,name]",
                               "personas.explicit_ids=[white_man]"]))
    assert [record.getMessage()[:52] for record in caplog.records] == [
        "personas.explicit_ids=['white_man'] is read by the e"]


def test_imported_answers_at_one_level_are_refused_at_design(tmp_path, monkeypatch):
    """Finding 5 for ingest: answers from White women only ran design, respond and score (and
    the judge) before the fit found no contrast. The refused prompts table is not left behind
    for a later stage to read."""
    from audit.methods.rasch.ingest.stages import with_imported_models
    from audit.methods.rasch.method import StageFiles, _design_imported

    monkeypatch.chdir(tmp_path)
    pl.DataFrame({"model": "m1", "persona_id": "white_woman", "gender": "woman",
                  "race": "White", "item": ["hiring_01", "hiring_02"],
                  "decision": "favourable"}).write_csv(tmp_path / "answers.csv")
    cfg = with_imported_models(_compose(["judge=rules_only", "ingest.input=answers.csv"]))
    files = StageFiles(tmp_path)
    with pytest.raises(AuditError, match="has two levels among the design's personas"):
        _design_imported(cfg, files, None)  # type: ignore[arg-type]
    assert not files.prompts.exists()


@pytest.mark.parametrize("replicates, counted", [(1, "x 1 replicate)"), (2, "x 2 replicates)")])
def test_the_design_line_counts_the_prompts_it_wrote(tmp_path, caplog, replicates, counted):
    """The run's first line said "x 1 replicates" for the default design."""
    from audit.methods.rasch.method import StageFiles, _design

    cfg = _compose(["judge=rules_only", "items=smoke", "personas=smoke",
                    f"design.replicates={replicates}"])
    with caplog.at_level("INFO", logger="audit.methods.rasch.method"):
        _design(cfg, StageFiles(tmp_path), None)  # type: ignore[arg-type]  # the clock is unused
    prompts = pl.read_parquet(StageFiles(tmp_path).prompts)
    line = next(record.getMessage() for record in caplog.records
                if record.getMessage().startswith("design: "))
    assert line.startswith(f"design: {prompts.height} prompts (") and line.endswith(counted), line


@pytest.mark.parametrize("overrides, message", [
    (["judge=smollm2", "judge.decoding=json", "judge.rationale_max_chars=40"],
     r"^judge 'smollm2' may write 16 tokens, too few for a rationale of 40 characters: set "
     r"judge.models.smollm2.sampling.max_tokens to at least \d+ or lower "
     r"judge.rationale_max_chars$"),
    (["judge=rules_only", "judge.use_rules=false"],
     r"^judge.use_rules=false, and judge=rules_only has no models, so nothing would label the "
     r"answers: set judge.use_rules=true, or choose a judge with a model"),
])
def test_a_judge_that_cannot_label_is_refused_at_design(overrides, message):
    """Bad-input review 2026-12-04: a writing judge allowed too few tokens for its rationale,
    and a cascade with neither rules nor a judge model, were refused only after every prompt
    had been answered (the second as "every answer failed or was unparseable", of answers
    that had not failed). The budget's fix names the key in full. Its own judge's rules, or a
    logprob judge that needs none, pass."""
    from audit.methods.rasch.method import _design

    with pytest.raises(AuditError, match=message):
        _design(_compose(overrides), None, None)  # type: ignore[arg-type]
    check_labeller(_compose(["judge=rules_only"]))
    check_labeller(_compose(["judge=logprob", "judge.use_rules=false"]))


@pytest.mark.parametrize("overrides, message", [
    (["judge.gold_file=no_such_gold.csv"], r"judge gold set not found at no_such_gold.csv"),
    # an item bank where the gold set goes: its columns are not a gold set's
    (["judge.gold_file=data/items/decision_items.csv"], r"lacks the column\(s\) 'gold_id'"),
    (["judge.gold_items=data/items/discrim_eval.csv"],
     r"^the gold set names items missing from the item bank: .*; point judge.gold_items at"),
])
def test_a_gold_set_that_cannot_measure_the_judge_is_refused_at_design(overrides, message):
    """Bad-input review 2026-12-04: a missing or malformed judge.gold_file, or a
    judge.gold_items bank that lacks its items, was refused in the score stage, after every
    prompt had been answered. A run that measures no judge reads neither file."""
    from audit.methods.rasch.method import _design

    with pytest.raises(AuditError, match=message):
        _design(_compose(["judge=rules_only", *overrides]), None, None)  # type: ignore[arg-type]
    assert gold_set_of(_compose(["judge=rules_only", "judge.evaluate_on_gold=false",
                                 *overrides])) is None


def test_a_design_of_name_personas_is_checked_for_contrasts_not_taken_for_a_placebo(caplog):
    """Bug caught: a design of name personas and no explicit one was taken for the placebo arm,
    said to contrast no groups, and its attributes never checked."""
    from audit.methods.rasch.analyse import check_design_attributes

    names = design_stage(_compose(["personas.generators=[baseline,name]"]))
    check_design_attributes(names, ["gender", "race"])
    assert "contrasts no groups" not in caplog.text


def test_no_attributes_asked_for_pass_a_design_whose_personas_differ():
    """Bug caught: fit.attributes=[] (a run that compares no groups) was refused for a design
    with explicit personas, as if it had asked for attributes held at one level."""
    from audit.methods.rasch.analyse import check_design_attributes

    check_design_attributes(design_stage(_compose([])), [])


def test_a_repeated_outcome_is_refused_naming_the_coding_left_to_choose():
    """Bug caught: the refusal offered every coding, fit.outcome's own among them."""
    with pytest.raises(AuditError, match=r"fit.second_outcome=favourable is fit.outcome already: "
                                         r"set it to undetermined, or leave it null$"):
        check_fit_settings(_compose(["fit.second_outcome=favourable"]))


def test_drop_labels_may_name_the_labels_that_are_never_coded():
    """Bug caught: fit.drop_labels naming unparseable or judge_failed (never coded, so dropping
    them is a no-op the fit accepts) was refused at design as an unknown label."""
    check_fit_settings(_compose(["fit.drop_labels=[refusal,unparseable,judge_failed]"]))


def test_a_logprob_judge_reads_no_gold_set_even_when_asked_to_evaluate_on_it():
    """Bug caught: gold_set_of read (and the score stage labelled) the gold set for
    judge.method=logprob, whose labels are the audited model's own preference, not a judge's."""
    assert gold_set_of(_compose(["judge=logprob", "judge.evaluate_on_gold=true",
                                 "judge.gold_file=no_such_gold.csv"])) is None
