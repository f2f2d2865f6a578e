"""``python -m quantile_surrogate.cli``: the same as the ``quantile-surrogate`` command."""

import sys

from . import main

sys.exit(main())
