"""pytest's settings for the doctests of the package (``--doctest-modules``, pyproject.toml).

Kept outside the package so that it is not installed with it.
"""

# Importing it runs the command line with pytest's arguments.
collect_ignore = ["quantile_surrogate/cli/__main__.py"]
