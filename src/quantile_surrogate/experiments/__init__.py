"""The paper's experiments, reproduced: one module per table or figure.

- :mod:`quantile_surrogate.experiments.precision_at_k`: tables 1 and 2 (Ionosphere, Housing)
  and the Covertype stand-in for the KDD Cup 2008 figure: precision at a predicted positive
  rate tau.
- :mod:`quantile_surrogate.experiments.synthetic`: figure 2, precision at recall 0.9 and 0.95
  on a Gaussian mixture.
- :mod:`quantile_surrogate.experiments.paper`: the protocols and the paper's reported numbers.
- :mod:`quantile_surrogate.experiments.labels`: which binary label the paper used.
- :mod:`quantile_surrogate.experiments.report`: markdown tables and plots.

The command ``quantile-surrogate reproduce ionosphere|housing|synthetic|cover`` runs them and
writes the tables and plots (docs/results.md has ours beside the paper's). The names below are
re-exported from those modules and documented there.
"""

from .paper import PAPER_TABLES, PROTOCOLS, Protocol
from .precision_at_k import run_precision_at_k, summarise
from .synthetic import run_synthetic

__all__ = ["PAPER_TABLES", "PROTOCOLS", "Protocol", "run_precision_at_k", "summarise", "run_synthetic"]
