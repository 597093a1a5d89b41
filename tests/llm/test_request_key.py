"""Request keys: every stored answer is found by its key, so a key must never drift between
versions of this tool (a changed key would silently re-send a whole audit)."""

from __future__ import annotations

from dataclasses import asdict

from hypothesis import given
from hypothesis import strategies as st

from audit.llm.backends import ChatRequest, Message, request_key

IDENTITY = {"backend": "openai_compatible", "model": "m", "digest": "none"}

# Keys computed by the release that first stored answers; they pin the payload and its hashing.
PINNED = [
    (ChatRequest((Message("system", "You are a loan officer."),
                  Message("user", "Approve Ms Okafor? \u2713")), 0.7, 0.95, 64, 1.1, 42),
     "33f9733bd7b5a8ef918a0d21edeb38805943f58311cdd3ef3fd21d063b6ac88d"),
    (ChatRequest((Message("user", "Label it."),), 0.0, 1.0, 8, 1.0, 7,
                 json_schema={"type": "string", "enum": ["favourable", "unfavourable"]}),
     "8653c0a3d655f1484d0d641c58aada50e4e824ba494e832e8432ff1515901ff1"),
    (ChatRequest((Message("user", "Pick."),), 0.0, 1.0, 1, 1.0, 3, score_options=("A", "B")),
     "eca49a57ed0c14009d088fcd057497d0f1ae90d9014dbce2b3b0fae85b1d82e6"),
]


def test_keys_of_stored_answers_do_not_change():
    assert [request_key(IDENTITY, request) for request, _ in PINNED] == [
        key for _, key in PINNED]


def _reference_payload(request: ChatRequest) -> dict:
    """The payload as `dataclasses.asdict` builds it: every field, messages as dicts."""
    payload = asdict(request)
    payload["messages"] = [asdict(message) for message in request.messages]
    if request.score_options:
        payload["score_options"] = list(request.score_options)
    else:
        del payload["score_options"]
    if not request.score_first_token:
        del payload["score_first_token"]
    return payload


messages = st.lists(st.builds(Message, st.sampled_from(["system", "user", "assistant"]),
                              st.text()), min_size=1, max_size=3).map(tuple)
schemas = st.none() | st.fixed_dictionaries(
    {"type": st.just("string"), "enum": st.lists(st.text(min_size=1), max_size=3)})
requests = st.builds(ChatRequest, messages, st.floats(0, 2), st.floats(0, 1),
                     st.integers(1, 4096), st.floats(1, 2), st.integers(0, 2**31),
                     schemas, st.lists(st.text(min_size=1), max_size=3).map(tuple),
                     st.booleans())


@given(requests)
def test_the_payload_holds_every_field_of_the_request(request):
    """Catches a field added to ChatRequest or Message that the payload would leave out."""
    assert request.as_payload() == _reference_payload(request)
