"""Any server that speaks the OpenAI chat API: vLLM, llama.cpp's server, LM Studio, OpenAI itself.

The official `openai` client does the wire work; its own retries are off because retrying is the
engine's job (one policy, with backoff, for every backend). The API key is read from the
environment variable the config names, at the moment the client is built, and is never stored on
the backend, in an identity or in an error message (a server that echoes it gets it redacted).
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from typing import Any
from urllib.parse import urlsplit

from scipy.special import logsumexp

from audit.llm.backends.base import BackendError, ChatRequest, Completion, connection_problem
from audit.config import SCHEMA_FORMATS, ModelConfig

log = logging.getLogger(__name__)

# Servers that need no key still need a non-empty string in the client.
NO_KEY = "not-needed"
TOP_LOGPROBS = 20  # OpenAI's maximum
# Log-probability given to a continuation that no top token opens: below every listed token.
UNSEEN_LOGPROB = -100.0
# repeat_penalty that changes nothing: the default of llama.cpp's server (since 2024) and the
# only value of servers without the parameter (vLLM, OpenAI), so it is not sent.
NEUTRAL_REPEAT_PENALTY = 1.0
# Keywords OpenAI's strict structured outputs reject (HTTP 400), so they are not sent to
# OpenAI's own API (judge/llm.py cuts the rationale to its length when it reads the reply). Other
# servers (vLLM, llama.cpp) build a grammar from them, whose maxLength keeps a judge's JSON
# inside its token budget: they still get them.
STRICT_UNSUPPORTED = frozenset({"minLength", "maxLength", "minProperties", "maxProperties",
                                "patternProperties", "unevaluatedProperties", "propertyNames"})
# Hosts of OpenAI's API (a name, or the end of one: Azure OpenAI's resources).
OPENAI_HOSTS = ("api.openai.com", ".openai.azure.com")
# How much of a server's error message a BackendError quotes.
SERVER_MESSAGE_CHARS = 200
# How much of a reply that is not the API's (a page title, the start of a body) an error quotes.
SHOWN_CHARS = 80


def retry_after(headers) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), if there is one."""
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    if value.strip().isdigit():  # HTTP's delay-seconds are digits: float() took "inf" too
        return float(value)
    from email.utils import parsedate_to_datetime

    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _wrap_schema(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """OpenAI's json_schema format needs an object at the top; a bare schema (the judge's string
    enum) travels wrapped in {"value": ...} and is unwrapped from the reply."""
    if schema.get("type") == "object":
        return schema, False
    return {"type": "object", "properties": {"value": schema}, "required": ["value"],
            "additionalProperties": False}, True


def is_openai(base_url: str | None) -> bool:
    host = urlsplit(base_url or "").hostname or ""
    return any(host == name or (name.startswith(".") and host.endswith(name))
               for name in OPENAI_HOSTS)


def strict_schema(schema: Any, unsupported: frozenset[str] = STRICT_UNSUPPORTED) -> Any:
    """`schema` as strict mode takes it: every object closed (additionalProperties false) with
    every property required, and without the `unsupported` keywords. Only the wire copy
    changes: the request, and so its key, keeps the schema as the caller built it."""
    if isinstance(schema, list):
        return [strict_schema(item, unsupported) for item in schema]
    if not isinstance(schema, dict):
        return schema
    strict = {name: strict_schema(value, unsupported) if name not in ("properties", "$defs")
              else {key: strict_schema(spec, unsupported) for key, spec in value.items()}
              for name, value in schema.items() if name not in unsupported}
    if strict.get("type") == "object" or "properties" in strict:
        strict["additionalProperties"] = False
        strict["required"] = list(strict.get("properties", {}))
    return strict


def base_url_problem(base_url: str) -> str:
    """Why a base_url that does not start with http:// or https:// cannot be sent to: one with
    another scheme (`ftp://`) was told to "write http://ftp://..." (bad-input review
    2026-12-04)."""
    scheme, separator, _ = base_url.partition("://")
    if separator and scheme and "/" not in scheme:
        return (f"base_url '{base_url}' has the scheme {scheme}://, which an OpenAI-compatible "
                f"server does not speak: use http:// or https:// in conf/model/")
    return (f"base_url '{base_url}' has no scheme: write http://{base_url} (or https://) in "
            f"conf/model/")


class OpenAICompatibleBackend:
    reads_api_key = True  # from the variable api_key_env names (audit.llm.backends.missing_api_key)

    def __init__(self, config: ModelConfig) -> None:
        if not config.base_url:
            raise BackendError("config", "openai_compatible needs `base_url` in conf/model/ "
                                         "(for example http://127.0.0.1:8000/v1)")
        if not config.base_url.startswith(("http://", "https://")):
            # The client cannot send to it, and said only "cannot reach ...: APIConnectionError"
            raise BackendError("config", base_url_problem(config.base_url))
        if not config.model.strip():  # sent as it is to a server that lists no models
            raise BackendError("config", "openai_compatible needs `model`, the name the server "
                                         "serves (its /v1/models lists them), in conf/model/")
        import openai  # imported here: only this backend needs the client

        api_key = NO_KEY
        if config.api_key_env:
            api_key = os.environ.get(config.api_key_env, "")
            if not api_key:
                raise BackendError("config", f"environment variable {config.api_key_env} (named "
                                             "by api_key_env) is not set: export the API key")
        self.config = config
        self._unsupported = (STRICT_UNSUPPORTED if is_openai(config.base_url)
                             else frozenset())
        self._openai = openai
        self._client = openai.OpenAI(base_url=config.base_url, api_key=api_key,
                                     timeout=config.timeout_s, max_retries=0)

    def identity(self) -> dict[str, str]:
        # No base_url: replicas serving the same model share stored answers. The OpenAI API
        # reports no weights digest, so a changed model behind the same name is not detected.
        return {"backend": "openai_compatible", "model": self.config.model, "digest": "none"}

    def reply_settings(self, request: ChatRequest) -> dict[str, Any]:
        """How a JSON schema is sent changes the reply (a grammar, or a hint): in the key of a
        request with a schema when it is not the default json_schema."""
        if request.json_schema is None or self.config.schema_format == SCHEMA_FORMATS[0]:
            return {}
        return {"schema_format": self.config.schema_format}

    def health_check(self) -> None:
        """Raise BackendError unless the server answers its model list and, when the list names
        models, names this one. The model name is the store key's whole identity here (no
        digest), and a server that serves one model whatever the request names (llama.cpp's)
        answered a misnamed model with its own: wrong answers under the right-looking name, kept
        in the store for every later run of that name. Read as bytes: the typed page would
        import the client's model resources first (10 ms, in the way of the first request)."""
        body = self._call_method(self._client.get, path="/models", cast_to=bytes)
        text = body.decode("utf-8", "replace")
        if re.match(r"\s*<", text):  # a web page: a proxy's login, or a site, not the API
            raise BackendError("not_the_api", self._not_the_api(
                f"is {what_came_back(text)[0]}, not the OpenAI API's model list",
                path="/models"))
        served = served_models(body)
        if served and self.config.model not in served:
            shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
            raise BackendError("model_not_found", f"{self.config.base_url} does not serve "
                                                  f"'{self.config.model}' (it serves: {shown}); "
                                                  "set `model:` to one of them")

    def complete(self, request: ChatRequest) -> Completion:
        if request.score_options:
            return self._score_first_token(request)
        options: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
            "temperature": request.temperature, "top_p": request.top_p,
            "max_tokens": request.max_tokens, "seed": request.seed,
        }
        if request.repeat_penalty != NEUTRAL_REPEAT_PENALTY:
            # Not an OpenAI parameter (OpenAI answers 400 to it): sent only when it changes
            # something, for servers that take it (llama.cpp's).
            options["repeat_penalty"] = request.repeat_penalty
        wrapped = False
        if request.json_schema is not None:
            schema, wrapped = _wrap_schema(request.json_schema)
            options["response_format"] = (
                {"type": "json_object", "schema": schema}
                if self.config.schema_format == "json_object" else
                {"type": "json_schema", "json_schema": {"name": "reply", "strict": True,
                                                        "schema": strict_schema(
                                                            schema, self._unsupported)}})
        started = time.perf_counter()
        try:
            reply = self._call(options)
        except BackendError as error:
            if not self._strict_keywords_refused(error, options):
                raise
            reply = self._call(options)  # _strict_keywords_refused took them out
        latency = time.perf_counter() - started
        try:
            choice = reply.choices[0]
            text = choice.message.content or ""
            tokens = int(getattr(reply.usage, "completion_tokens", 0) or 0)
        except (AttributeError, IndexError, TypeError) as error:
            # Was "reply without a choice: 'str' object has no attribute 'choices'" for a
            # proxy's login page (server probe, 2026-12-07): say what came back.
            what, said = what_came_back(reply)
            raise BackendError("malformed_reply", self._not_the_api(
                f"is {what}, not an OpenAI chat completion", said)) from error
        if wrapped:
            try:
                text = json.dumps(json.loads(text)["value"])
            except (json.JSONDecodeError, KeyError, TypeError):
                pass  # left as is: the judge's strict parser records it as not an allowed label
        return Completion(text, tokens, str(choice.finish_reason or ""), latency)

    def _strict_keywords_refused(self, error: BackendError, options: dict[str, Any]) -> bool:
        """True when the server answered 400 naming a keyword strict mode rejects that the body
        sent: a gateway in front of OpenAI (LiteLLM, OpenRouter, a company proxy) whose host
        is_openai cannot know. The body and every later one then go without those keywords, as
        to OpenAI itself; the request, and so its key, keeps its schema."""
        format_ = options.get("response_format") or {}
        sent = format_.get("json_schema", {}).get("schema")
        if error.kind != "http_status" or "HTTP 400 " not in str(error) or sent is None:
            return False
        message, schema_text = str(error), json.dumps(sent)
        named = sorted(keyword for keyword in STRICT_UNSUPPORTED
                       if keyword in message and keyword in schema_text)
        if not named:
            return False
        if not self._unsupported:
            log.warning("%s refused the JSON-schema keyword %s under strict mode: sending "
                        "schemas without the keywords OpenAI's strict mode rejects from now on "
                        "(the judge cuts its rationale to length itself)",
                        self.config.base_url, ", ".join(named))
        self._unsupported = STRICT_UNSUPPORTED
        format_["json_schema"]["schema"] = strict_schema(sent, STRICT_UNSUPPORTED)
        return True

    def _score_first_token(self, request: ChatRequest) -> Completion:
        """Score continuations from the first token's top log-probabilities, the most the OpenAI
        API offers: each top token counts for the first continuation it opens (in request
        order), so no probability is counted twice; a continuation no top token opens gets
        UNSEEN_LOGPROB. An approximation where option words share a first token."""
        options = {
            "model": self.config.model, "max_tokens": 1, "temperature": request.temperature,
            "top_p": request.top_p, "seed": request.seed, "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
            "messages": [{"role": m.role, "content": m.content} for m in request.messages],
        }
        started = time.perf_counter()
        reply = self._call(options)
        try:
            top = reply.choices[0].logprobs.content[0].top_logprobs
            candidates = [(entry.token, float(entry.logprob)) for entry in top]
        except (AttributeError, IndexError, TypeError) as error:
            raise BackendError("malformed_reply", "no first-token logprobs in the reply: the "
                                                  "server may not support logprobs") from error
        scores = {continuation: [] for continuation in request.score_options}
        for token, logprob in candidates:
            opened = next((c for c in request.score_options if token and c.startswith(token)),
                          None)
            if opened is not None:
                scores[opened].append(logprob)
        combined = {continuation: float(logsumexp(values)) if values else UNSEEN_LOGPROB
                    for continuation, values in scores.items()}
        return Completion(json.dumps(combined, sort_keys=True), 0, "scored",
                          time.perf_counter() - started)

    def _call(self, body: dict[str, Any]) -> Any:
        """POST the body through the client's own transport (auth, timeout, error types) and
        read the reply as a typed ChatCompletion. `chat.completions.create` would first walk
        the body against its TypedDicts, which costs more CPU than the rest of the call
        (2.2 against 1.3 ms a request here); at hundreds of requests a second on two cores
        that GIL-bound walk was what kept the engine below the server's throughput."""
        from openai.types.chat import ChatCompletion

        return self._call_method(self._client.post, path="/chat/completions", body=body,
                                 cast_to=ChatCompletion)

    def _call_method(self, method, **options: Any) -> Any:
        openai = self._openai
        try:
            return method(**options)
        except openai.APITimeoutError as error:
            raise BackendError("timeout", f"no reply from {self.config.base_url.rstrip('/')}"
                                          f"{options.get('path', '')} within "
                                          f"{self.config.timeout_s} s") from error
        except openai.APIConnectionError as error:
            raise BackendError("connection", f"cannot reach {self.config.base_url}: "
                                             f"{connection_problem(error, self.config.base_url)}"
                               ) from error
        except openai.APIStatusError as error:
            status = error.status_code
            kind = ("rate_limit" if status == 429 else
                    "server_error" if status >= 500 else "http_status")
            said = _server_message(error)
            message = f"HTTP {status} from {error.request.url}: {said}{self._hint(status, said)}"
            raise BackendError(kind, self._redacted(message),
                               retry_after(error.response.headers), status=status) from error
        except (openai.APIResponseValidationError, ValueError) as error:  # JSONDecodeError too
            # A JSONDecodeError keeps the text, a UnicodeDecodeError the bytes: quote them.
            start = getattr(error, "doc", None) or getattr(error, "object", None)
            what = (f"is not JSON ({_clip(repr(start[:SHOWN_CHARS]))})" if start
                    else "is an empty body, not JSON")
            raise BackendError("malformed_reply", self._not_the_api(
                what, path=options.get("path", ""))) from error

    def _not_the_api(self, what: str, said: bool = False, path: str = "/chat/completions") -> str:
        """A reply from `path` that is not the OpenAI API's: what it is, and what to check."""
        fix = ("the server's message says why (its log may say more), or check base_url in "
               "conf/model/" if said else
               "base_url should reach the server's OpenAI-compatible API (often ending in /v1), "
               "not a web page or a proxy; check it in conf/model/")
        return f"the reply from {self.config.base_url.rstrip('/')}{path} {what}: {fix}"

    def _hint(self, status: int, said: str) -> str:
        """What to check for the statuses whose cause is in the config."""
        if status in (401, 403):
            return (f" (check the key in ${self.config.api_key_env})" if self.config.api_key_env
                    else " (the server wants an API key: name its variable in api_key_env)")
        if status == 404:
            return " (check `model` and `base_url` in conf/model/)"
        if status == 400 and "context" in said.lower():  # vLLM's, OpenAI's, llama.cpp's words
            return (" (lower sampling.max_tokens in conf/model/, or give the server a longer "
                    "context: vLLM's --max-model-len, llama.cpp's --ctx-size)")
        if status == 429:
            return (" (lower max_concurrency in conf/model/, or set "
                    "engine.requests_per_minute to the server's limit)")
        return ""

    def _redacted(self, message: str) -> str:
        """`message` without the API key's value, should a server ever echo it."""
        key = os.environ.get(self.config.api_key_env or "", "")
        return message.replace(key, "[API key]") if key else message


def served_models(body: bytes) -> list[str]:
    """The model ids of an OpenAI-style model list (`{"data": [{"id": ...}]}`); empty when the
    body is not one (a server that answers the route without listing models is not judged)."""
    try:
        listed = json.loads(body).get("data")
        return [str(entry["id"]) for entry in listed if isinstance(entry, dict) and "id" in entry]
    except (ValueError, AttributeError, TypeError):
        return []


def what_came_back(reply: Any) -> tuple[str, bool]:
    """What a server sent instead of a chat completion, and whether it said why: a web page
    (with its title), other text, or JSON without choices (with the server's own message when
    it sent one, as gateways do with status 200)."""
    if isinstance(reply, str):  # the client hands back a body that is not JSON as text
        title = re.search(r"<title[^>]*>(.*?)</title>", reply, re.IGNORECASE | re.DOTALL)
        if title or re.match(r"\s*<(!doctype|html)", reply, re.IGNORECASE):
            return "an HTML page" + (f' titled "{_clip(title.group(1))}"' if title else ""), False
        return (f"text ({_clip(repr(reply[:SHOWN_CHARS]))})" if reply.strip() else "empty"), False
    error = (getattr(reply, "model_extra", None) or {}).get("error")
    said = error.get("message", error) if isinstance(error, dict) else error
    if said:
        return f"JSON without choices (the server said: {_clip(str(said))})", True
    return "JSON without choices", False


def _clip(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text` on one line, cut at `limit` characters."""
    text = " ".join(text.split())
    return (text[:limit] + "...") if len(text) > limit else text


def _server_message(error: Any) -> str:
    """The server's own explanation of an HTTP error, on one line and cut short: the message of
    an OpenAI-style error body, else the body itself."""
    body = error.body
    # OpenAI's error object has a message; FastAPI's (vLLM's routes) a detail: {'detail': 'Not
    # Found'} was printed as the dict itself.
    message = (body.get("message", body.get("detail", body)) if isinstance(body, dict)
               else body)
    if message is None:
        message = error.response.text or error.response.reason_phrase
    return _clip(str(message), SERVER_MESSAGE_CHARS)
