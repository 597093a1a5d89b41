"""The backend of a model whose answers were collected elsewhere (`python -m audit.ingest`).

An imported audit names its models by the names in the answers file; each gets this backend, so
the report and the run's tags say what the model is (an imported one, no file digest) through the
same Backend interface as any other, and anything that would ask it a question fails with one line.
"""

from __future__ import annotations

from audit.config import ModelConfig
from audit.llm.backends.base import BackendError, ChatRequest, Completion


class ImportedBackend:
    scores_options = False  # its answers are all there is: nothing can be scored afresh

    def __init__(self, config: ModelConfig) -> None:
        self.config = config

    def identity(self) -> dict[str, str]:
        return {"backend": "imported", "model": self.config.model, "digest": ""}

    def complete(self, request: ChatRequest) -> Completion:
        raise BackendError("unsupported", f"model '{self.config.model}' is imported: its answers "
                           f"came from a file and it cannot be asked anything new")
