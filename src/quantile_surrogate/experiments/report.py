"""Tables and plots for the experiments: ours beside the paper's, written to an output folder.

Each function takes the summary of :func:`~quantile_surrogate.experiments.precision_at_k.summarise`
(one row per tau and method, with columns ``tau, method, mean, std, n``) and, optionally, the
paper's numbers for the data set (``PAPER_TABLES[dataset]`` of
:mod:`quantile_surrogate.experiments.paper`). ``quantile-surrogate reproduce`` writes their
output to ``table.md`` and a PNG.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display on servers or in CI
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from .._utils.files import atomic_write  # noqa: E402

__all__ = ["markdown_table", "gap_table", "plot_precision_at_tau"]


def _cell(mean, std):
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    return f"{mean:.2f} ± {0.0 if math.isnan(std) else std:.2f}"


def markdown_table(summary: pd.DataFrame, paper: dict | None, methods, taus) -> str:
    """A markdown table with one row per tau: each method's mean ± std, ours beside the paper's.

    Parameters
    ----------
    summary : pandas.DataFrame
        Columns ``tau, method, mean, std`` (:func:`~quantile_surrogate.experiments.precision_at_k.summarise`).
    paper : dict or None
        ``{method: {tau: (mean, std)}}``; a method in it gets a second column with the paper's
        numbers. None for none.
    methods : sequence of str
        The methods, in column order.
    taus : sequence of float
        The rows; printed as percentages.

    Returns
    -------
    str
        The table, without a final newline; a missing entry is ``-``.

    Examples
    --------
    >>> import pandas as pd
    >>> from quantile_surrogate.experiments.report import markdown_table
    >>> summary = pd.DataFrame({"tau": [0.01, 0.05], "method": "Q3", "mean": [0.95, 0.97],
    ...                         "std": [0.1, 0.05], "n": 100})
    >>> paper = {"Q3": {0.01: (0.98, 0.10), 0.05: (0.98, 0.07)}}
    >>> print(markdown_table(summary, paper, ["Q3"], [0.01, 0.05]))
    | tau % | Q3 ours | Q3 paper |
    |---|---|---|
    | 1 | 0.95 ± 0.10 | 0.98 ± 0.10 |
    | 5 | 0.97 ± 0.05 | 0.98 ± 0.07 |
    """
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
    r"""Ours minus the paper's mean for ``method``, with the standard error of the difference.

    Parameters
    ----------
    summary : pandas.DataFrame
        Columns ``tau, method, mean, std, n``.
    paper : dict
        ``{method: {tau: (mean, std)}}``, the paper's numbers.
    method : str
        The method compared.
    taus : sequence of float
        The rows; a tau missing from ours or the paper's is skipped.
    paper_n : int, default=100
        The paper's number of splits.

    Returns
    -------
    str
        A markdown table: the difference, its standard error and whether ours is within two
        standard errors below the paper's mean, or above it.

    Notes
    -----
    With our mean :math:`m`, standard deviation :math:`s` over :math:`n` splits, and the
    paper's :math:`m_p, s_p` over :math:`n_p` splits,

    .. math::
        \mathrm{s.e.} = \sqrt{s^2 / n + s_p^2 / n_p}, \qquad
        \text{verdict "yes"} \iff m - m_p \ge -2\,\mathrm{s.e.}

    Examples
    --------
    >>> import pandas as pd
    >>> from quantile_surrogate.experiments.report import gap_table
    >>> summary = pd.DataFrame({"tau": [0.01, 0.05], "method": "Q3", "mean": [0.95, 0.97],
    ...                         "std": [0.1, 0.05], "n": 100})
    >>> paper = {"Q3": {0.01: (0.98, 0.10), 0.05: (0.98, 0.07)}}
    >>> print(gap_table(summary, paper, "Q3", [0.01, 0.05]))
    | tau % | Q3 ours - paper | s.e. of difference | within 2 s.e. or better |
    |---|---|---|---|
    | 1 | -0.030 | 0.014 | no |
    | 5 | -0.010 | 0.009 | yes |
    """
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
    """Plot P@tau against tau with ±1 std error bars for each method; the paper's as hollow markers.

    Parameters
    ----------
    summary : pandas.DataFrame
        Columns ``tau, method, mean, std``.
    paper : dict or None
        ``{method: {tau: (mean, std)}}``: the paper's means, drawn as hollow markers.
    methods : sequence of str
        The methods drawn, each a line (offset a little along x so the bars do not overlap).
    taus : sequence of float
        The x values (drawn as percentages).
    title : str
        The plot's title.
    path : pathlib.Path
        The PNG to write (atomically: a temporary file in the same folder, then renamed).

    Returns
    -------
    None

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import pandas as pd
    >>> from quantile_surrogate.experiments.report import plot_precision_at_tau
    >>> summary = pd.DataFrame({"tau": [0.01, 0.05], "method": "Q3", "mean": [0.95, 0.97],
    ...                         "std": [0.1, 0.05]})
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "p_at_tau.png"
    ...     plot_precision_at_tau(summary, None, ["Q3"], [0.01, 0.05], "Ionosphere", path)
    ...     path.read_bytes()[:4]
    b'\x89PNG'
    """
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
