"""The paper's experiments, reproduced: one module per table or figure.

- :mod:`.precision_at_k`: tables 1 and 2 (Ionosphere, Housing) and the Covertype stand-in for
  the KDD Cup 2008 figure: precision at a predicted positive rate tau.
- :mod:`.synthetic`: figure 2, precision at recall 0.9 and 0.95 on a Gaussian mixture.
- :mod:`.paper`: the protocols and the paper's reported numbers.
- :mod:`.report`: markdown tables and plots; :mod:`.command`: ``quantile-surrogate reproduce``.
"""

from .paper import PAPER_TABLES, PROTOCOLS, Protocol
from .precision_at_k import run_precision_at_k, summarise
from .synthetic import run_synthetic

__all__ = ["PAPER_TABLES", "PROTOCOLS", "Protocol", "run_precision_at_k", "summarise", "run_synthetic"]
