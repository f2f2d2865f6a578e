"""``evaluate``'s outputs: the Markdown report and the precision-recall plot (written by the caller)."""

from __future__ import annotations

from pathlib import Path

from ..objectives import get_objective
from .model_file import MODELS

__all__ = ["report_text", "plot_writer"]


def _model_line(saved) -> str:
    guarantee = ""
    if saved.delta is not None:
        guarantee = (f", threshold calibrated on a held-out {saved.calibration_size:.0%} of the training rows so that "
                     f"the constraint holds with probability >= {1 - saved.delta:g}")
    return (f"Model: {MODELS.get(saved.model_kind, saved.model_kind)} ({saved.model_kind}), objective "
            f"{saved.objective}, target {saved.target:g}"
            f"{guarantee}; trained on {Path(saved.trained_on).name} ({saved.n_rows} rows) with quantile-surrogate "
            f"{saved.version}.")


def report_text(saved, model_file, data, table, n_used: int, n_resamples: int, seed: int, n_rows: int,
                n_positive: int, plot_name: str) -> str:
    """The report: what was evaluated, the metrics with their bootstrap intervals, and the plot."""
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
