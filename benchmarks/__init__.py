"""Benchmarks: scripts that print a table measured in one run (see ``benchmarks/RESULTS.md``).

Run each as a module from the repository root, e.g. ``python -m benchmarks.per_step --quick``.
Speed is measured here and never asserted in unit tests.
"""
