"""``quantile-surrogate reproduce ionosphere|housing|synthetic|cover``: the paper's experiments.

Writes into ``--out`` (default ``results/<experiment>``): ``results.csv`` (every split),
``table.md`` (ours beside the paper's numbers) and a PNG plot, and prints the table.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from .._utils.files import output_folder
from ._args import int_at_least, nonzero_int
from ..experiments.paper import PAPER_TABLES, PROTOCOLS
from ..experiments.precision_at_k import run_precision_at_k, summarise
from ..experiments.report import gap_table, markdown_table, plot_precision_at_tau, write_atomically

EXPERIMENTS = ("ionosphere", "housing", "synthetic", "cover")


def quick_protocol(protocol):
    """A smoke-test version: fewer splits, two regularisation values, shorter training."""
    grids = {family: (name, values[1::3] or values) for family, (name, values) in protocol.grids.items()}
    return dataclasses.replace(protocol, n_splits=3, grids=grids, aatp_candidates=8,
                               max_epochs=min(protocol.max_epochs, 250))


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "reproduce", help="run one of the paper's experiments and print its table beside the paper's",
        description=__doc__.splitlines()[0])
    parser.add_argument("experiment", choices=EXPERIMENTS, help="which of the paper's experiments to run")
    parser.add_argument("--splits", type=int_at_least(1, "100"), default=None,
                        help="random splits (default: the protocol's, 100)")
    parser.add_argument("--jobs", type=nonzero_int, default=-1,
                        help="parallel processes, or -1 for all cores (default -1)")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: results/EXPERIMENT)")
    parser.add_argument("--quick", action="store_true", help="a smoke test: 3 splits, small grids, short training")
    parser.add_argument("--select", choices=("cv", "paper"), default="cv",
                        help="regularisation per tau: nested cross-validation on the training part (honest, "
                             "default) or the best mean test score (the paper's choice)")
    parser.add_argument("--folds", type=int_at_least(2, "3"), default=3,
                        help="inner cross-validation folds for --select cv (default 3)")
    parser.add_argument("--rounding", choices=("ceil", "floor"), default="ceil", help="K = ceil or floor of tau n")
    parser.set_defaults(handler=run)


def run(args) -> int:
    out = args.out or Path("results") / (args.experiment + ("-quick" if args.quick else ""))
    started = time.perf_counter()
    # The folder is made (and a bad --out refused) before hours of computing, and removed again if the run fails.
    with output_folder(out):
        if args.experiment == "synthetic":
            text = _synthetic(args, out)
        else:
            text = _precision_at_k(args, out)
        text += f"\n\nWall time: {time.perf_counter() - started:.0f} s.\n"
        write_atomically(out / "table.md", lambda p: p.write_text(text))
    print(text)
    print(f"Wrote {out}/table.md, results.csv and the plot.")
    return 0


def _precision_at_k(args, out: Path) -> str:
    protocol = PROTOCOLS[args.experiment]
    if args.quick:
        protocol = quick_protocol(protocol)
    results = run_precision_at_k(protocol, n_splits=args.splits, select=args.select, folds=args.folds,
                                 rounding=args.rounding, n_jobs=args.jobs)
    write_atomically(out / "results.csv", lambda p: results.to_csv(p, index=False))
    summary = summarise(results)
    paper = PAPER_TABLES.get(args.experiment)
    n = int(results.split.nunique())
    title = f"{args.experiment}: P@tau over {n} splits, select={args.select}, K={args.rounding}(tau n)"
    plot_precision_at_tau(summary, paper, protocol.methods, protocol.taus, title, out / "precision_at_tau.png")
    parts = [f"## {title}", "", markdown_table(summary, paper, protocol.methods, protocol.taus)]
    if paper:
        parts += ["", "Q3, ours minus the paper's mean:", "", gap_table(summary, paper, "Q3", protocol.taus)]
    if protocol.note:
        parts += ["", protocol.note]
    parts += ["", "Regularisation used (most frequent choice per tau):", "", _choice_table(summary, protocol)]
    return "\n".join(parts)


def _choice_table(summary, protocol) -> str:
    rows = ["| tau % | " + " | ".join(f"{m} ({protocol.grids['Q' if m.startswith('Q') else m][0]})"
                                      for m in protocol.methods) + " |",
            "|---|" + "---|" * len(protocol.methods)]
    for tau in protocol.taus:
        cells = []
        for m in protocol.methods:
            row = summary[(summary.tau == tau) & (summary.method == m)]
            cells.append(f"{float(row['value'].iloc[0]):g}" if len(row) else "-")
        rows.append(f"| {100 * tau:g} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _synthetic(args, out: Path) -> str:
    from .. import datasets, metrics
    from ..experiments.synthetic import PAPER_SYNTHETIC, RECALLS, fit_lines, plot_lines, run_synthetic

    n_splits = args.splits or (2 if args.quick else 10)
    max_epochs = 100 if args.quick else 300
    results = run_synthetic(n_splits=n_splits, max_epochs=max_epochs, n_jobs=args.jobs)
    write_atomically(out / "results.csv", lambda p: results.to_csv(p, index=False))
    summary = results.groupby(["recall", "method"])["test"].agg(["mean", "std"]).reset_index()
    lines = ["## synthetic: precision at recall on fresh test draws", "",
             f"{n_splits} seeds, 4000 training and 4000 test rows each.", "",
             "| recall | LR | Eban | Q (quantile loss) |", "|---|---|---|---|"]
    for recall in RECALLS:
        cells = []
        for m in ("LR", "Eban", "Q"):
            row = summary[(summary.recall == recall) & (summary.method == m)]
            cells.append(f"{float(row['mean'].iloc[0]):.2f} ± {float(row['std'].fillna(0).iloc[0]):.2f}")
        lines.append(f"| {recall:g} | " + " | ".join(cells) + " |")
    lines += ["", f"The paper's figure 2, at recall 0.9: LR {PAPER_SYNTHETIC['LR']}, quantile loss {PAPER_SYNTHETIC['Q']}."]
    X, y = datasets.make_gaussian_mixture(4000, random_state=0)
    fitted = fit_lines(X, y, 0.9, seed=0, max_epochs=max_epochs)
    precision = {k: metrics.precision_at_recall(y, X @ w + b, 0.9) for k, (w, b, _) in fitted.items()}
    plot_lines(X, y, fitted, 0.9, out / "synthetic.png", precision)
    return "\n".join(lines)
