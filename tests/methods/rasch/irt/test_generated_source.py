"""PyTensor's generated source goes to one pruned folder, not a new file in /tmp per function
(irt/__init__.py): without the setting every compile leaves a file in the temporary folder."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import numpy as np
import pytensor
import pytensor.tensor as pt

import audit.methods.rasch.irt  # noqa: F401  (sets generated_src_dir on import)


def test_compiling_a_function_leaves_nothing_in_the_temporary_folder(tmp_path, monkeypatch) -> None:
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    # A constant no earlier compile used, so PyTensor generates (and writes) new source.
    constant = float(uuid.uuid4().int % 10_000) + 0.5
    x = pt.dvector("x")
    function = pytensor.function([x], pt.exp(x) * constant, mode="NUMBA")

    assert np.allclose(function(np.zeros(2)), constant)
    assert list(system_tmp.iterdir()) == []
    written = Path(pytensor.config.generated_src_dir)
    assert written.parent == Path(pytensor.config.compiledir)
    assert any(str(constant) in path.read_text() for path in written.glob("*.py"))
