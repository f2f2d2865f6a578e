"""Plumbing with no maths, below every other layer: argument checks and their message constants
(:mod:`~quantile_surrogate._utils.checks`), the one count rule (:mod:`~quantile_surrogate._utils.counts`),
the one divergence error (:mod:`~quantile_surrogate._utils.errors`), atomic files
(:mod:`~quantile_surrogate._utils.files`), seeds (:mod:`~quantile_surrogate._utils.seeding`)."""
