"""Tables and plots for the experiments: ours beside the paper's, written to an output folder."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers or in CI
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .._files import atomic_write  # noqa: E402

__all__ = ["markdown_table", "gap_table", "plot_precision_at_tau", "write_atomically"]


def _cell(mean, std):
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    return f"{mean:.2f} ± {0.0 if math.isnan(std) else std:.2f}"


def markdown_table(summary: pd.DataFrame, paper: dict | None, methods, taus) -> str:
    """One row per tau; for each method 'ours (paper)' as mean ± std."""
    header = ["tau %"] + [f"{m} ours" + (f" | {m} paper" if paper and m in paper else "") for m in methods]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * sum(1 + (bool(paper) and m in paper) for m in methods) + "---|"]
    for tau in taus:
        cells = [f"{100 * tau:g}"]
        for m in methods:
            row = summary[(summary.tau == tau) & (summary.method == m)]
            cells.append(_cell(float(row["mean"].iloc[0]), float(row["std"].iloc[0])) if len(row) else "-")
            if paper and m in paper:
                cells.append(_cell(*paper[m][tau]) if tau in paper[m] else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def gap_table(summary: pd.DataFrame, paper: dict, method: str, taus, paper_n: int = 100) -> str:
    """Ours minus the paper's mean for ``method``, with the standard error of the difference."""
    lines = [f"| tau % | {method} ours - paper | s.e. of difference | within 2 s.e. or better |", "|---|---|---|---|"]
    for tau in taus:
        row = summary[(summary.tau == tau) & (summary.method == method)]
        if not len(row) or tau not in paper.get(method, {}):
            continue
        mean, std, n = float(row["mean"].iloc[0]), float(row["std"].iloc[0]), int(row["n"].iloc[0])
        p_mean, p_std = paper[method][tau]
        diff = mean - p_mean
        se = math.sqrt((std**2) / n + (p_std**2) / paper_n)
        verdict = "yes" if diff >= -2 * se else "no"
        lines.append(f"| {100 * tau:g} | {diff:+.3f} | {se:.3f} | {verdict} |")
    return "\n".join(lines)


def plot_precision_at_tau(summary: pd.DataFrame, paper: dict | None, methods, taus, title: str, path: Path):
    """P@tau against tau with ±1 std error bars for each method; the paper's as hollow markers."""
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    x = [100 * t for t in taus]
    for j, m in enumerate(methods):
        rows = summary[summary.method == m].set_index("tau").reindex(taus)
        offset = (j - len(methods) / 2) * 0.04 * (x[-1] - x[0] + 1) / len(methods)
        line = ax.errorbar([v + offset for v in x], rows["mean"], yerr=rows["std"], marker="o", capsize=3, label=m)
        if paper and m in paper:
            ax.plot([v + offset for v in x], [paper[m].get(t, (float("nan"),))[0] for t in taus], linestyle="none", marker="o",
                    markerfacecolor="none", markersize=9, color=line[0].get_color())
    ax.set_xlabel("tau, predicted positive rate (%)")
    ax.set_ylabel("precision at tau (test)")
    ax.set_title(title + ("\n(hollow markers: the paper's means)" if paper else ""))
    ax.set_ylim(-0.05, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(ncol=len(methods), fontsize="small", loc="lower center")
    fig.tight_layout()
    write_atomically(path, lambda p: fig.savefig(p, dpi=120, format="png"))
    plt.close(fig)


def write_atomically(path: Path, write) -> None:
    """Write through a uniquely named temporary file in the same folder, fsync, rename (:func:`.._files.atomic_write`)."""
    atomic_write(path, write)
