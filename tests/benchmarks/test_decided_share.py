"""benchmarks/decided_share.py: its documented usage composes the audit config (no model runs)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def decided_share(script):
    return script("decided_share")


def test_the_docstring_example_composes_the_audit_config(decided_share):
    """Bug caught: the script looked for configs in the repository's conf/, which moved into
    src/audit/conf (beb78eb), so its documented usage died with Hydra's
    MissingConfigException before it asked anything."""
    composed = decided_share.compose_audit_config(
        "qwen_coder_0_5b", ["items.per_domain=2", "personas=smoke",
                            "model.qwen_coder_0_5b.sampling.max_tokens=24"])
    assert composed.model.qwen_coder_0_5b.sampling.max_tokens == 24
    assert composed["items"].per_domain == 2

