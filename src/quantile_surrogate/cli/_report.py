"""``evaluate``'s outputs: the Markdown report and the precision-recall plot (written by the caller)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..objectives import get_objective
from .model_file import MODELS

__all__ = ["report_text", "group_lines", "plot_writer"]


def _model_line(saved) -> str:
    guarantee = ""
    if saved.delta is not None:
        guarantee = (f", threshold calibrated on a held-out {saved.calibration_size:.0%} of the training rows so that "
                     f"the constraint holds with probability >= {1 - saved.delta:g}")
    if getattr(saved, "groups", None) is not None:
        guarantee += f", one threshold per group of column '{saved.groups}'"
        guarantee += " (the guarantee holds in each group)" if saved.delta is not None else ""
    if getattr(saved, "constraints", None):
        guarantee += ", under the constraints " + ", ".join(repr(text) for text in saved.constraints)
        guarantee += "" if saved.groups is not None else " at one threshold for every row"
    return (f"Model: {MODELS.get(saved.model_kind, saved.model_kind)} ({saved.model_kind}), objective "
            f"{saved.objective}, target {saved.target:g}"
            f"{guarantee}; trained on {Path(saved.trained_on).name} ({saved.n_rows} rows) with quantile-surrogate "
            f"{saved.version}.")


def _cell(value: float, low: float, high: float) -> str:
    if not np.isfinite(value):
        return "n/a"
    return f"{value:.4f} [{low:.4f}, {high:.4f}]" if np.isfinite(low) else f"{value:.4f} [n/a]"


def group_lines(column: str, rows) -> list[str]:
    """The per-group table: each metric with its 95 % interval from a bootstrap of that group's rows alone.

    ``rows``: ``(group, n_rows, n_positive, table, n_used)`` per group, ``table`` as from
    :func:`~quantile_surrogate.objectives.bootstrap.bootstrap_metrics`.
    """
    names = [name for name, *_ in rows[0][3]] if rows else []
    lines = [f"## Per group (column '{column}')", "",
             "| group | rows | positives | " + " | ".join(names) + " | resamples used |",
             "|---" * (len(names) + 4) + "|"]
    for group, n_rows, n_positive, table, used in rows:
        cells = " | ".join(_cell(value, low, high) for _, value, low, high in table)
        lines.append(f"| {group} | {n_rows} | {n_positive} | {cells} | {used} |")
    lines += ["", "Each cell: the value on the group's rows [95 % percentile-bootstrap interval, resampling that "
                  "group's rows only]; n/a where the group lacks a class or a predicted positive.", ""]
    return lines


def report_text(saved, model_file, data, table, n_used: int, n_resamples: int, seed: int, n_rows: int,
                n_positive: int, plot_name: str, extra=()) -> str:
    """The report: what was evaluated, the metrics with their bootstrap intervals, ``extra`` lines, and the plot."""
    lines = [
        f"# {Path(model_file).name} on {Path(data).name}",
        "",
        _model_line(saved),
        f"Test rows: {n_rows}, of which {n_positive} positive (class {saved.classes[1]!r}).",
        "",
        "| metric | value | 95 % bootstrap interval |",
        "|---|---|---|",
        *[f"| {name} | {value:.4f} | [{low:.4f}, {high:.4f}] |" for name, value, low, high in table],
        "",
        f"Percentile bootstrap over rows: {n_used} of {n_resamples} resamples (those with both classes), "
        f"seed {seed}. The deployed threshold predicts positive when the score is > 0.",
        "",
        *extra,
        f"![precision-recall curve]({plot_name})",
        "",
    ]
    return "\n".join(lines)


def plot_writer(positive, score, precision: float, recall: float, objective, target: float, title: str):
    """A function ``write(path)`` that saves the precision-recall curve with the deployed point as PNG.

    The recall target is drawn when the objective's constraint is a recall.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.metrics import precision_recall_curve

    curve_p, curve_r, _ = precision_recall_curve(positive, score)

    def write(path: Path) -> None:
        fig, ax = plt.subplots(figsize=(5, 4))
        try:
            ax.step(curve_r, curve_p, where="post", label="precision-recall curve")
            ax.plot([recall], [precision], "o", color="C3",
                    label=f"deployed threshold (P={precision:.3f}, R={recall:.3f})")
            if get_objective(objective).constraint == "recall":
                ax.axvline(target, color="grey", linestyle=":", label=f"recall target {target:g}")
            ax.set(xlabel="recall", ylabel="precision", xlim=(0, 1.02), ylim=(0, 1.02), title=title)
            ax.legend(loc="lower left", fontsize=8)
            fig.tight_layout()
            fig.savefig(path, format="png", dpi=120)
        finally:
            plt.close(fig)

    return write
