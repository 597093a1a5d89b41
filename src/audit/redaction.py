"""What counts as a secret in a config, and how one is kept out of what is logged.

The API key itself never enters a config (a server's key is read from the environment variable
`api_key_env` names), so these are the guards for where one is written anyway: a setting named
as a secret has its value redacted from MLflow's params (audit.tracking.mlflow.flatten), and a
server URL that carries one is refused before the run (audit.config_ranges.server_url).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

# A setting or URL parameter whose name says it holds a secret. A name ending in "token" (token,
# hf_token) is one; "max_tokens" is a count.
SECRET_NAME = re.compile(r"(api[_-]?key|token$|secret|password|authorization)", re.IGNORECASE)
REDACTED = "***redacted***"
# Query parameters that carry a key under a bare name (Google's APIs take `?key=`).
URL_KEY_NAMES = frozenset({"key", "sig", "signature"})


def is_secret_name(key: object) -> bool:
    """A key named as a secret; one ending in `_env` (api_key_env) names the environment
    variable that holds it, which is kept: it is needed to re-create the run."""
    name = str(key)
    return bool(SECRET_NAME.search(name)) and not name.lower().endswith("_env")


def redacted(value: Any) -> Any:
    """`value` with the values of secret-named keys redacted, inside lists too: a list of
    mappings was logged as its text, keys and all."""
    if isinstance(value, Mapping):
        return {key: REDACTED if is_secret_name(key) else redacted(entry)
                for key, entry in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redacted(entry) for entry in value)
    return value


def holds_credential(url: str) -> bool:
    """Whether `url` carries a password (`http://user:key@host`) or a query parameter named as
    a secret (`?api_key=...`)."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # a malformed URL: its backend names what is wrong with it
        return False
    return bool(password) or any(SECRET_NAME.search(name) or name.lower() in URL_KEY_NAMES
                                 for name, _ in parse_qsl(parts.query, keep_blank_values=True))
