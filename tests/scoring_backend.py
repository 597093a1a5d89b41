"""A scoring judge for unit tests: it answers every scoring request with fixed log-probabilities
per word (decision words, letters, Yes/No), leaving out the words it has no score for."""

from __future__ import annotations

import json

from audit.llm.backends import Completion


class ScoringBackend:
    def __init__(self, scores: dict[str, float]) -> None:
        self.scores, self.requests = scores, []

    def identity(self):
        return {"backend": "scores", "model": json.dumps(self.scores), "digest": "none"}

    def complete(self, request):
        self.requests.append(request)
        reply = {word: self.scores[word] for word in request.score_options if word in self.scores}
        return Completion(json.dumps(reply), 0, "scored", 0.0)
