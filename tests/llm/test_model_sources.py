"""Model files from where users keep them: a packaged model, a GGUF path, a pinned hub file.

The hub is a loopback server (tests/servers/hub_loopback.py) reached through HF_ENDPOINT by the real
huggingface_hub client; the real hub is never contacted."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import pytest

from audit.config import HubFileConfig, ModelConfig, SamplingConfig
from audit.llm.backends.base import BackendError, ChatRequest, Message
from audit.llm.backends.packaged import CACHE_ENV, PACKAGED_MODELS, PartedFile, resolve_model_path
from audit.llm.model_sources import hub_file, model_file
from servers.hub_loopback import HubLoopback

REPO, REVISION, FILE = "someone/tiny-gguf", "0123456789abcdef0123456789abcdef01234567", "tiny.gguf"
CONTENT = b"GGUF" + bytes(range(256)) * 64


def _hub(sha256: str | None = None, file: str = FILE) -> HubFileConfig:
    return HubFileConfig(repo=REPO, file=file, revision=REVISION,
                         sha256=sha256 or hashlib.sha256(CONTENT).hexdigest())


@pytest.fixture
def hub(tmp_path, monkeypatch):
    """The loopback hub, with HF_ENDPOINT pointing at it and an empty model cache."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "models"))
    with HubLoopback({(REPO, REVISION, FILE): CONTENT}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def test_a_hub_file_is_downloaded_once_into_the_model_cache(hub, tmp_path) -> None:
    """Fails if the file lands outside the cache, differs from the served bytes, or is fetched
    again on the next run."""
    path = hub_file(_hub())
    assert path.read_bytes() == CONTENT
    assert (tmp_path / "models" / "hub") in path.parents
    assert hub.downloads() == 1
    assert hub_file(_hub()) == path and hub.downloads() == 1


def test_a_hub_file_with_another_digest_is_deleted_and_never_used(hub) -> None:
    """Fails if a file that does not match its pin is returned, or stays in the cache where the
    next run would find it without downloading."""
    with pytest.raises(BackendError) as error:
        hub_file(_hub(sha256="ab" * 32))
    assert error.value.kind == "model_digest_mismatch"
    assert "deleted and not used" in str(error.value) and "\n" not in str(error.value)
    with pytest.raises(BackendError):
        hub_file(_hub(sha256="ab" * 32))
    assert hub.downloads() == 2  # downloaded again: nothing of the bad file was kept
    assert hub_file(_hub()).read_bytes() == CONTENT


def test_a_missing_hub_file_and_a_malformed_pin_are_one_line_each(hub) -> None:
    with pytest.raises(BackendError, match=r"cannot download other\.gguf from the hub repo "
                                           r"someone/tiny-gguf at 0123.*: 404"):
        hub_file(_hub(file="other.gguf"))
    with pytest.raises(BackendError, match="hub.sha256 must be the file's 64-hex-digit sha256"):
        hub_file(_hub(sha256="main"))
    assert hub.downloads() == 0


def test_a_model_names_its_file_in_exactly_one_way(tmp_path) -> None:
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(CONTENT)
    assert model_file(ModelConfig(path=str(gguf))) == gguf
    with pytest.raises(BackendError, match="exactly one of `model`.*gives model and path"):
        model_file(ModelConfig(model="smollm2-135m-instruct", path=str(gguf)))
    with pytest.raises(BackendError, match="gives none"):
        model_file(ModelConfig())
    with pytest.raises(BackendError, match="model file not found: .*absent.gguf"):
        model_file(ModelConfig(path=str(tmp_path / "absent.gguf")))


def test_a_packaged_model_without_its_extra_names_the_extra(monkeypatch) -> None:
    """What a slim install (no `embedded` extra) sees when it picks an embedded default model."""
    monkeypatch.setitem(PACKAGED_MODELS, "absent-model", PartedFile(
        parts=(("absent_part_pkg1", "data/part01.bin"), ("absent_part_pkg2", "data/part02.bin")),
        file_name="absent.gguf", sha256="0" * 64, size=10))
    with pytest.raises(BackendError) as error:
        model_file(ModelConfig(model="absent-model"))
    message = str(error.value)
    assert "not installed: install the `embedded` extra" in message and "\n" not in message


CHILD = textwrap.dedent("""
    import json, sys
    from audit.config import HubFileConfig, ModelConfig, SamplingConfig
    from audit.llm.backends import create_backend
    from audit.llm.backends.base import ChatRequest, Message
    hub = HubFileConfig(**json.loads(sys.argv[1]))
    backend = create_backend(ModelConfig(backend="embedded", hub=hub, n_threads=2,
                                         sampling=SamplingConfig(max_tokens=8)))
    request = ChatRequest(messages=(Message("user", "Say yes."),), temperature=0.0, top_p=1.0,
                          max_tokens=8, repeat_penalty=1.0, seed=1)
    print(json.dumps({"identity": backend.identity(), "text": backend.complete(request).text}))
""")


@pytest.mark.slow
def test_an_embedded_model_from_the_hub_answers_like_the_same_packaged_file(tmp_path) -> None:
    """The real SmolLM2 GGUF served by the loopback hub, downloaded in a fresh process through
    HF_ENDPOINT alone: same identity (so the same request keys and stored answers) and the same
    answer as the packaged file. Fails if the hub path hands the runtime another file or the
    identity depends on where the file came from."""
    packaged = resolve_model_path("smollm2-135m-instruct")
    content = packaged.read_bytes()
    pin = {"repo": "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", "file": packaged.name,
           "revision": REVISION, "sha256": hashlib.sha256(content).hexdigest()}
    with HubLoopback({(pin["repo"], REVISION, pin["file"]): content}) as server:
        environment = {**os.environ, "HF_ENDPOINT": server.url,
                       CACHE_ENV: str(tmp_path / "models"), "HF_HUB_OFFLINE": "0"}
        result = subprocess.run([sys.executable, "-c", CHILD, json.dumps(pin)], env=environment,
                                capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    from_hub = json.loads(result.stdout.strip().splitlines()[-1])
    from audit.llm.backends import create_backend

    local = create_backend(ModelConfig(backend="embedded", model="smollm2-135m-instruct",
                                       n_threads=2, sampling=SamplingConfig(max_tokens=8)))
    request = ChatRequest(messages=(Message("user", "Say yes."),), temperature=0.0, top_p=1.0,
                          max_tokens=8, repeat_penalty=1.0, seed=1)
    assert from_hub["identity"] == local.identity()
    assert from_hub["text"] == local.complete(request).text


def test_a_design_stops_before_any_prompt_when_a_models_extra_is_missing(monkeypatch, tmp_path):
    """The Rasch design checks the audited models and the judge's: a judge whose parts are not
    installed stops the run at design, not after every audited prompt was answered."""
    from audit.cli.params import compose_params
    from audit.errors import AuditError
    from audit.llm.model_sources import check_request_models, models_by_key

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "empty-cache"))
    cfg = compose_params([])
    judge = next(iter(cfg.judge.models.values()))
    entry = PACKAGED_MODELS[judge.model]
    monkeypatch.setitem(PACKAGED_MODELS, judge.model, PartedFile(
        parts=tuple((f"absent_{index}", relative) for index, (_, relative)
                    in enumerate(entry.parts)), file_name=entry.file_name, sha256=entry.sha256,
        size=entry.size))
    with pytest.raises(AuditError, match=f"the embedded model '{judge.model}' is not installed: "
                                         "install the `embedded` extra"):
        check_request_models(models_by_key(cfg.judge.models, "judge.models"))


def test_the_design_check_names_the_model_and_refuses_a_file_that_is_not_gguf(tmp_path) -> None:
    """Bugs caught (bad-input review 2026-12-04): `path=/etc/passwd` passed the design check,
    and llama.cpp failed on it at every request; "this one gives model and path" named neither
    the model nor the fix."""
    from audit.errors import AuditError
    from audit.llm.model_sources import check_request_models

    text = tmp_path / "notes.txt"
    text.write_text("not a model\n")
    with pytest.raises(AuditError, match=rf"^model.mine: {text} is not a GGUF file \(it does not "
                                         r"begin with GGUF\): `path:` must name a model's "
                                         r".gguf file$"):
        check_request_models({"model.mine": ModelConfig(path=str(text))})
    with pytest.raises(AuditError, match=r"^judge.models.j: an embedded model .* gives model and "
                                         r"path: keep the one you mean and set the others to ''$"):
        check_request_models({"judge.models.j": ModelConfig(model="smollm2-135m-instruct",
                                                            path=str(text))})
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(CONTENT)
    check_request_models({"model.mine": ModelConfig(path=str(gguf))})


def test_the_design_check_reads_llamacpp_models_and_hub_pins_without_downloading(tmp_path):
    """Catches the design check skipping llamacpp models (a missing file failed at the first
    request instead) or a hub pin's form (a branch name given as sha256 was found only at
    download), and a model with no file at all told to keep one of none."""
    from audit.errors import AuditError
    from audit.llm.model_sources import check_request_models

    absent = tmp_path / "absent.gguf"
    with pytest.raises(AuditError, match=rf"^model.local: model file not found: {absent} "):
        check_request_models({"model.local": ModelConfig(backend="llamacpp", path=str(absent))})
    with pytest.raises(AuditError, match=r"^model.hub: hub.sha256 must be the file's "
                                         r"64-hex-digit sha256 .*; got 'main'$"):
        check_request_models({"model.hub": ModelConfig(hub=_hub(sha256="main"))})
    with pytest.raises(AuditError, match=r"this one gives none$"):
        check_request_models({"model.bare": ModelConfig(model="")})


@pytest.mark.parametrize("pin", ["a" * 65, "AB" * 32, "g" + "a" * 63],
                         ids=["65-digits", "upper-case", "one-non-hex"])
def test_a_pin_that_is_no_lowercase_sha256_is_refused_before_any_download(hub, pin) -> None:
    """Catches the pin check accepting a pin too long, in upper case (it never equals the
    file's lowercase digest, so the download was deleted as a mismatch) or with one digit that
    is not hex."""
    with pytest.raises(BackendError, match="hub.sha256 must be the file's 64-hex-digit sha256") \
            as error:
        hub_file(_hub(sha256=pin))
    assert error.value.kind == "config" and hub.downloads() == 0


def test_a_hub_file_that_cannot_be_downloaded_is_a_missing_model(hub) -> None:
    """Catches a failed download read as another kind than model_not_found (which stops a run
    at once instead of retrying each request)."""
    with pytest.raises(BackendError) as error:
        hub_file(_hub(file="other.gguf"))
    assert error.value.kind == "model_not_found"


def test_a_path_is_read_from_the_home_folder_and_must_be_a_readable_gguf_file(tmp_path,
                                                                             monkeypatch) -> None:
    """Catches `~` in `path:` not expanded, a folder taken for a file (it read as "cannot be
    read"), a file whose first bytes only resemble GGUF's accepted, and a file that cannot be
    read reported as another kind than a missing model."""
    monkeypatch.setenv("HOME", str(tmp_path))
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(CONTENT)
    assert model_file(ModelConfig(path="~/mine.gguf")) == gguf
    with pytest.raises(BackendError, match=f"^model file not found: {tmp_path} ") as error:
        model_file(ModelConfig(path=str(tmp_path)))
    assert error.value.kind == "model_not_found"
    almost = tmp_path / "almost.gguf"
    almost.write_bytes(b"GGUX" + CONTENT[4:])
    with pytest.raises(BackendError, match="is not a GGUF file") as error:
        model_file(ModelConfig(path=str(almost)))
    assert error.value.kind == "config"

    def refused(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(type(gguf), "open", refused)
    with pytest.raises(BackendError, match=f"^model file {gguf} cannot be read \\(Permission "
                                           "denied\\)$") as error:
        model_file(ModelConfig(path=str(gguf)))
    assert error.value.kind == "model_not_found"
