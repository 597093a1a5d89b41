"""What `python -m audit.compare` shows: the forest plot of changes and its HTML page.

The page is one self-contained file, as a run's report is (html.py): the figure is embedded as a
data URI under the same Content-Security-Policy, so the page a release reviewer is sent opens
with its figure (it linked `changes_forest.png` beside it, and lost the figure once copied
anywhere else). It shares the run report's styles (templates/_style.html.j2).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

import polars as pl

from audit.methods.checks import percent
from audit.methods.rasch.report.html import png_data_uri, template_environment
from audit.methods.rasch.report.plots import decision_forest
from audit.tracking.mlflow import code_state

TEMPLATE = "compare.html.j2"


def change_figure(changes: pl.DataFrame, hdi_prob: float):
    """Each change with its HDI and the one it was decided on, coloured by decision, as a run's
    contrasts are drawn (it drew the HDI alone, so a change clear of zero looked decided)."""
    rows = [{**row, "rope_low": -row["rope"], "rope_high": row["rope"]}
            for row in changes.iter_rows(named=True)]
    return decision_forest(
        rows, [f"{row['attribute']}: {row['level_a']} vs {row['level_b']}" for row in rows],
        hdi_prob, estimate="change", xlabel="change in gap, B - A (logits)",
        title="Change in each gap (grey band: region of practical equivalence)")


def change_forest_plot(changes: pl.DataFrame, hdi_prob: float, path: Path) -> Path:
    import matplotlib.pyplot as plt

    from audit.tables import save_figure

    figure = change_figure(changes, hdi_prob)
    path = save_figure(figure, path)
    plt.close(figure)
    return path


def comparison_name(sides: Sequence[Any]) -> str:
    """The two models, or, for one model under two settings, the model and its two runs: the
    page's title and the comparison's MLflow run name ("qwen vs qwen" told a reader nothing)."""
    first, last = sides[0], sides[-1]
    if first.model != last.model:
        return f"{first.model} vs {last.model}"
    return f"{first.model}: {Path(first.source).name} vs {Path(last.source).name}"


def change_report(changes: pl.DataFrame, sides: Sequence[Any], *, pairing: str, verdict: str,
                  failed: bool, converged: bool, figure: Path, lines: Sequence[str],
                  left_out: Sequence[str] = (), notes: Sequence[str] = (),
                  provenance: dict[str, str] | None = None) -> str:
    """The comparison's page: the two sources, how they were paired, what differs between them
    beyond the change, the gate, one row per contrast and the figure."""
    provenance = provenance or {}
    hdi = percent(float(changes["hdi_prob"][0])) if changes.height else ""
    return template_environment().get_template(TEMPLATE).render(
        title=f"Change in each gap: {comparison_name(sides)}",
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        commit=code_state(provenance)[0], version=provenance.get("audit.version", ""),
        sides=[{"label": side.label, "source": side.source, "model": side.model}
               for side in sides],
        pairing=pairing, notes=list(notes), left_out=list(left_out), verdict=verdict,
        failed=failed, converged=converged, hdi_label=hdi,
        rows=[{**row, "line": line} for row, line in zip(changes.iter_rows(named=True), lines)],
        figure=png_data_uri(figure))
