"""Structured configs: the typed schema every YAML file under ``conf/`` is validated against.

Hydra merges the YAML groups onto these dataclasses, so a typo in a key or a wrong type fails at
composition with a message naming the key, instead of surfacing as a KeyError mid-audit. A value
that has the right type but makes no sense (a probability above 1, a negative timeout) is refused
by its field's `range` or `choices` (audit.config_ranges.within, one_of), checked for every section
once the config is composed (audit.methods.configs.to_audit_config).

The shared sections live here; each method's own sections and verdict rules live in its package
(methods/NAME/config.py: SECTIONS, VERDICT_RULES). audit.methods.configs adds them to these to make
AuditConfig and VerdictConfig: this foundation module imports no method, nor the registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import MISSING

from audit.config_ranges import one_of, seed_setting, server_url, within

# The default configs ship inside the package, so an installed wheel composes without a checkout.
CONF_DIR = str(Path(__file__).resolve().parent / "conf")


# How an openai_compatible backend sends a JSON schema (ModelConfig.schema_format). Declared
# here, so a misspelt one is refused at composition, naming its key: the backend refused it
# after the design stage as "schema_format 'foo'", naming no model (review 2026-12-04).
SCHEMA_FORMATS = ("json_schema", "json_object")


@dataclass
class SamplingConfig:
    """Every sampling parameter is sent explicitly: servers differ in their defaults
    (llama.cpp's server uses repeat_penalty 1.1, the in-process default is 1.0)."""

    temperature: float = within(0.7, 0)
    top_p: float = within(0.95, 0, 1, open_low=True)
    max_tokens: int = within(48, 1)
    repeat_penalty: float = within(1.0, 0, open_low=True)


@dataclass
class HubFileConfig:
    """A GGUF file on the Hugging Face hub, pinned: downloaded once into the model cache with
    huggingface_hub (HF_TOKEN, HF_ENDPOINT honoured) and used only when its sha256 matches."""

    repo: str = MISSING  # e.g. Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF
    file: str = MISSING  # the file's path in the repository
    revision: str = MISSING  # a commit sha (a branch name would let the file change under a run)
    sha256: str = MISSING  # the file's digest (the hub lists it as the LFS "SHA256")


@dataclass
class ModelConfig:
    """One audited model (or a judge's model): which backend talks to it and how it samples."""

    backend: str = "embedded"
    # Servers: the model name the server serves. embedded and llamacpp: a packaged model name
    # (audit.llm.backends.packaged.PACKAGED_MODELS) or a GGUF path; optional with `path` or `hub`.
    model: str = ""
    # embedded and llamacpp: a GGUF file on disk, or one on the Hugging Face hub (one of the two,
    # instead of a packaged `model` name). audit.llm.model_sources resolves all three.
    path: str | None = None
    hub: HubFileConfig | None = None
    system_prompt: str = ""
    # embedded, llamacpp: context size (per slot); ollama: sent as num_ctx
    n_ctx: int = within(2048, 1)
    n_threads: int = within(2, 1)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    # Servers (ollama, openai_compatible): where, how long to wait, and which environment
    # variable holds the API key. The key itself never enters a config, a log or a run.
    # ollama: host (default $OLLAMA_HOST); openai_compatible: .../v1. No credential in it.
    base_url: str | None = server_url(None)
    # Several hosts serving the same model (instead of base_url): requests are spread over them
    # by free slots (max_concurrency each), and a failing host is set aside until it recovers.
    base_urls: list[str] = server_url([], many=True)
    api_key_env: str | None = None
    timeout_s: float = within(120.0, 0, open_low=True)
    keep_alive: str | None = None  # ollama: how long the server keeps the model loaded ("5m")
    # openai_compatible: how a JSON schema is sent. `json_schema` is the OpenAI standard (OpenAI,
    # vLLM); llama.cpp's Python server takes only `json_object` with a `schema` field.
    schema_format: str = one_of("json_schema", SCHEMA_FORMATS)
    # Requests in flight at once to this model (a server's parallel slots; per host with
    # base_urls). embedded: its parallel slots; more than 1 is faster but not reproducible (batch
    # composition changes the logits; benchmarks/bench_embedded.py). llamacpp: always one at a
    # time (its contexts are not thread-safe).
    max_concurrency: int = within(1, 1)


# Declared here, so a misspelt one is refused at composition: checked in the score stage, it
# stopped the run after every answer had been bought (bad-input review 2026-12-04).
JUDGE_METHODS = ("cascade", "logprob")
# What each decoding does: JudgeConfig.decoding below; judge/llm.py carries them out.
JUDGE_DECODINGS = ("json", "options", "first_token", "letters")


@dataclass
class JudgeConfig:
    """The judge labels free-text answers; it is configured apart from the audited models.

    `models` is the panel: one entry is a single judge, several vote (majority label, with their
    agreement reported); none leaves only the rules."""

    name: str = MISSING
    # cascade: rules, then the judge panel | logprob: no judge; the audited model's probability of
    # opening its answer with the favourable rather than the unfavourable option word decides.
    method: str = one_of("cascade", JUDGE_METHODS)
    use_rules: bool = True
    models: dict[str, ModelConfig] = field(default_factory=dict)
    # How a judge model gives its label. json: generates a JSON enum of the decision words under a
    # grammar (with an optional rationale). options: scores each decision word as the opening of
    # its reply and takes the most likely (no generation, no grammar, no rationale; the four
    # words' probabilities are the rationale). first_token: the same from each word's first
    # token, all four from one prompt evaluation (4 to 5 times faster on the embedded runtime).
    # letters: the four outcomes described in full and answered by letter (A-D), the letters'
    # first tokens scored in one evaluation (the default judge; judge/llm.py says why).
    # Needs a backend that scores (the embedded ones).
    decoding: str = one_of("json", JUDGE_DECODINGS)
    # Ask a judge that reads an answer as not deciding a second question, "did it refuse?", and
    # split needs_more_information from refusal by its answer (judge/llm.py, check_refusal). Needs
    # a backend that scores (the embedded ones). Costs one prompt evaluation more for each such
    # answer (about 2 s with the default judge).
    refusal_check: bool = False
    # The cut on log P(Yes) - log P(No): above it, a refusal. The default judge leans to No, so
    # its own even odds (0) are too strict: chosen for the cascade on each half of the gold set
    # and measured on the other (benchmarks/judge_refusal_cut.py), -0.5 (P(Yes) > 0.38) was best
    # on both halves.
    refusal_log_odds: float = -0.5
    # Longest rationale a judge may write after its decision; 0 asks for the decision alone.
    rationale_max_chars: int = within(80, 0)
    # Also store p_favourable from the audited model's option log-probabilities (cascade method).
    score_options: bool = False
    # Below this probability mass on the two option words, the logprob method reads no decision.
    min_decision_mass: float = within(0.05, 0, 1)
    gold_file: str = "data/judge_gold.csv"
    gold_items: str = "data/items/decision_items.csv"  # the bank the gold answers respond to
    # Evaluate the judge on the gold set in every audit run (cached in the response store), on
    # the first N answers of each kind (by gold_id) to keep a first run short; None: all of them.
    # `python -m audit.judge_eval` always uses the whole set. At least 1: to skip the gold set,
    # evaluate_on_gold=false.
    evaluate_on_gold: bool = True
    gold_per_category: int | None = within(3, 1)
    # The judge panel also re-reads this many rule-labelled answers of each demographic cell
    # (audited model x the fit's attributes), so the report can show its agreement with the
    # rules per group and warn on a difference (methods/rasch/judge/rule_check.py); 0: off.
    # Small by default: each answer costs one judge request (about 1 s with the default judge).
    rule_check_per_group: int = within(2, 0)


@dataclass
class ItemsConfig:
    """Which decision scenarios enter the design."""

    name: str = "default"
    bank: str = "data/items/decision_items.csv"
    domains: list[str] = field(default_factory=list)  # empty: every domain in the bank
    item_ids: list[str] = field(default_factory=list)  # empty: every item of the chosen domains
    # Keep the first N items (by item_id) of each domain; None: all.
    per_domain: int | None = within(None, 1)


@dataclass
class PersonasConfig:
    """Which persona generators run; each generator reads only its own fields."""

    name: str = "default"
    generators: list[str] = field(default_factory=lambda: ["baseline", "explicit", "null"])
    explicit_file: str = "data/personas/explicit_profiles.csv"
    explicit_ids: list[str] = field(default_factory=list)  # empty: every profile in the file
    # The placebo arm's size; the default audit asks 4 (conf/personas/default.yaml says why).
    null_count: int = within(16, 0)
    null_length: int = within(10, 1)
    # The `name` generator: names that signal gender and race (first names from Bertrand and
    # Mullainathan 2004); empty name_ids: every profile in the file.
    names_file: str = "data/personas/name_profiles.csv"
    name_ids: list[str] = field(default_factory=list)


@dataclass
class DesignConfig:
    replicates: int = within(1, 1)
    seed: int = seed_setting(20251123)
    # An adaptive audit (Rasch method; methods/rasch/adaptive.py, docs/adaptive.md): rounds of
    # prompts from this design, each chosen by the last round's fit, stopping once every
    # headline contrast is decided, cannot be decided within the budget, or the budget is spent.
    adaptive: bool = False
    max_prompts: int | None = within(None, 1)  # the budget; None: the whole design
    # A budget in estimated tokens, as the preflight estimates them (a prompt token per 4
    # characters, every answer at its max_tokens), turned into prompts at the design's average;
    # None: none.
    max_tokens_budget: int | None = within(None, 1)
    # A budget in answering time: the audited models' recorded latencies of the answers asked
    # (each as the response store first recorded it, summed per model over its concurrency, as
    # the preflight estimates time), not the clock, so a rerun served from the store stops at the
    # same look; None: none.
    max_answer_minutes: float | None = within(None, 0, open_low=True)
    round_prompts: int | None = within(None, 1)  # prompts a round; None: a quarter of the budget
    # Stop when no open contrast is decidable within the budget with this probability. 0.2,
    # chosen under the group prior's sd of 2 on one seed and measured on eight others
    # (bench_adaptive, RESULTS.md "Adaptive audits"): a median half of the design at gaps of 0
    # to 1 logit where 0.1 asked three quarters, the fixed design's power at 1 logit and false
    # `different` rate, and agreement with its decisions 320 of 347 (0.92; with 99% of alpha for
    # the last look; futility judged from the first look) against 0.1's 188 of 195 (0.96, with
    # 95%); it costs up to 5 points of power at 4 logits (0.72 against 0.77).
    futility: float = within(0.2, 0, 1, open_high=True)
    # Futility may stop a run only once this share of the budget is asked; 0: from the first
    # look. Waiting for half the budget (0.5) wins back a few of the fixed design's decisions for
    # more prompts: replayed on nine seeds' traces at gaps of 0 to 1 logit, 86 of its 89
    # decisions at a mean prompt share of 0.61 against 83 at 0.54. On a fresh seed, from the
    # first look cost 1 point of power at 3 logits (0.398 against the fixed design's 0.409) for a
    # mean share of 0.52 at gaps 0 to 1. On the embedded default, where the fixed design decides
    # nothing, it stops at 63 of 252 prompts against 189 (RESULTS.md "Adaptive audits"). The
    # first look predicts less well (AUC 0.66 for the audits the fixed design goes on to decide
    # something in, 0.88 at half), so 0.5 suits a run that must track the fixed design.
    futility_from: float = within(0.0, 0, 1)


@dataclass
class EngineConfig:
    # Share of requests allowed to fail (after retries) before the run stops with an error.
    max_failed_share: float = within(0.0, 0, 1)
    # Requests per minute to each model, across its concurrent requests; None: no limit.
    requests_per_minute: float | None = within(None, 0, open_low=True)
    # Retries of transient failures: exponential backoff with jitter between attempts.
    max_attempts: int = within(4, 1)
    backoff_initial_s: float = within(1.0, 0)
    backoff_max_s: float = within(30.0, 0)
    # A server's Retry-After longer than this is not waited for: the request fails at once,
    # saying so (an exhausted daily quota answers 429 with hours, and each request slept them).
    max_retry_after_s: float = within(600.0, 0)


@dataclass
class TrackingConfig:
    enabled: bool = True
    tracking_uri: str = "sqlite:///mlflow.db"
    artifact_root: str = "mlartifacts"
    experiment: str = "audit"
    run_name: str | None = None


@dataclass
class PathsConfig:
    """Every path in one place; relative paths resolve against the directory the audit starts in."""

    root_dir: str = "."
    # Read by nothing: each data file has its own key (items.bank, personas.explicit_file, ...).
    # Kept so that the params.yaml of earlier audits still composes; a value other than this
    # default is warned of (methods/run.check_settings), since it moved no file.
    data_dir: str = "data"
    response_store: str = ".audit/responses.sqlite3"
    output_dir: str = "outputs/latest"


@dataclass
class SharedConfig:
    """The sections every method shares; each method's own sections (`fit`, `plan`, `iat`, `dif`,
    `counterfactual`) are added from its package (methods/NAME/config.py) to make AuditConfig."""

    # Several audited models at once: each file in conf/model/ adds one key under `model`.
    model: dict[str, ModelConfig] = field(default_factory=dict)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    items: ItemsConfig = field(default_factory=ItemsConfig)
    personas: PersonasConfig = field(default_factory=PersonasConfig)
    design: DesignConfig = field(default_factory=DesignConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    method: str = "rasch"


@dataclass
class SharedVerdictRules:
    """The verdict rule every method applies; each method adds its own (VERDICT_RULES in
    methods/NAME/config.py), every one a `key=value` override of `python -m audit.verdict`."""

    alpha: float = within(0.05, 0, 1, open_low=True, open_high=True)
