"""Plumbing with no maths, below every other layer: argument checks and their messages
(:mod:`~quantile_surrogate._utils.checks`), atomic files (:mod:`~quantile_surrogate._utils.files`),
seeds (:mod:`~quantile_surrogate._utils.seeding`)."""
