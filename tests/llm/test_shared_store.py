"""Two processes sharing one response store: the answer stored first is the one each of them
reports, so a run's table is what its rerun replays."""

from __future__ import annotations

from servers.scripted import NO_WAIT, prompts

from audit.config import ModelConfig
from audit.llm.backends import Completion, request_key
from audit.llm.engine import collect_responses
from audit.llm.store import ResponseStore


class _RacedBackend:
    """Answers `mine`, but another process (a second connection to the store) stores its own
    answer to the same request while this one is in flight."""

    def __init__(self, store_path, mine: str, theirs: str) -> None:
        self.store_path, self.mine, self.theirs = store_path, mine, theirs

    def identity(self) -> dict[str, str]:
        return {"backend": "raced", "model": "m", "digest": "none"}

    def complete(self, request):
        with ResponseStore(self.store_path) as other:
            other.put_ok(request_key(self.identity(), request), self.identity(),
                         request.as_payload(), self.theirs, 3, 0.5)
        return Completion(self.mine, 2, "stop", 0.1)


def test_a_run_reports_the_answer_its_rerun_replays_when_another_process_stored_it_first(
        tmp_path):
    """Catches a losing writer keeping its own answer while the store (and so every rerun) has
    the other process's."""
    path = tmp_path / "store.sqlite3"
    model = ModelConfig(backend="fake", model="m")
    with ResponseStore(path) as store:
        first = collect_responses(prompts(2, "m"), {"m": _RacedBackend(path, "mine", "theirs")},
                                  {"m": model}, store, NO_WAIT, show_progress=False)
        rerun = collect_responses(prompts(2, "m"), {"m": _RacedBackend(path, "x", "y")},
                                  {"m": model}, store, NO_WAIT, show_progress=False)
    assert first["response_text"].to_list() == ["theirs"] * 2
    assert rerun["from_cache"].all()
    assert first["response_text"].equals(rerun["response_text"])
    assert first["completion_tokens"].equals(rerun["completion_tokens"])


def test_put_ok_returns_the_answer_stored_first(tmp_path):
    with ResponseStore(tmp_path / "s.sqlite3") as one, ResponseStore(tmp_path / "s.sqlite3") as two:
        assert one.put_ok("k", {}, {}, "first", 1, 0.1).response_text == "first"
        assert two.put_ok("k", {}, {}, "second", 1, 0.1).response_text == "first"
