"""Dask input and XGBoost on Dask for :class:`~.dask_boosted.DaskQuantileBoostingClassifier` (private).

- :func:`dask_client`, :func:`as_dask_rows`, :func:`as_dask_labels`, :func:`as_dask_weights`: the client,
  and ``X`` / ``y`` / ``sample_weight`` as Dask arrays whose row blocks are the partitions (the units
  of the held-out selection);
- :func:`pin_partitions`: the arrays computed with their row blocks on the workers in row order (the
  same seed and cluster then give the same model, whatever placement Dask would choose);
- :func:`take_partitions`: some partitions of an array, lazily (their blocks stay where they are);
- :class:`DaskBoosting`: the calls of :class:`~quantile_surrogate.estimators._boosting_backends.XGBoostBackend`
  (a log-loss start, a continuation with ``xgb_model=``, margins) through ``xgboost.dask``, with
  the same parameters, plus the held-out margins after every round.

Dask and XGBoost are imported when called, so the package imports without them.
"""

from __future__ import annotations

import numpy as np

from .._utils.checks import (WEIGHT_NEGATIVE_MESSAGE, WEIGHT_NONFINITE_MESSAGE, WEIGHT_TYPE_MESSAGE,
                             WEIGHT_ZERO_MESSAGE)
from ._threshold import NOT_2D_MESSAGE, refuse_text_columns

__all__ = ["DaskBoosting", "as_dask_labels", "as_dask_rows", "as_dask_weights", "dask_client", "pin_partitions",
           "take_partitions", "worker_ranks",
           "DASK_INPUT_MESSAGE", "NO_CLIENT_MESSAGE", "DASK_MISSING_MESSAGE", "LABELS_LENGTH_MESSAGE"]

#: ``TypeError`` for ``X`` or ``y`` that are not Dask collections (NumPy, pandas, lists).
DASK_INPUT_MESSAGE = (
    "`{name}` must be a {kinds}; got {type_name}. Its partitions are what the held-out selection holds out, so "
    "they are not chosen for you: wrap in-memory data with dask.array.from_array({name}, chunks={chunks}), or "
    "train on one machine with QuantileBoostingClassifier(backend='xgboost')."
)
#: ``ValueError`` when ``client=None`` and no Dask client exists.
NO_CLIENT_MESSAGE = (
    "No Dask client: pass client=distributed.Client(...) or create one first (it becomes the default client), "
    "e.g. Client(LocalCluster(n_workers=2))."
)
#: ``ImportError`` without the `dask` extra.
DASK_MISSING_MESSAGE = "DaskQuantileBoostingClassifier needs dask[distributed]: pip install 'quantile-surrogate[dask]'"
#: ``ValueError`` for ``y`` with another number of rows than ``X``.
LABELS_LENGTH_MESSAGE = "`{name}` has shape {got} and `X` {expected} rows; pass a 1-D {name} with one entry per row of `X`."
NOT_NUMERIC_MESSAGE = "`X` must hold numbers (int, float or bool); got dtype {dtype}."


def dask_client(client):
    """``client``, or Dask's default client (:data:`NO_CLIENT_MESSAGE` when there is none)."""
    if client is not None:
        return client
    try:
        import distributed
    except ImportError as error:
        raise ImportError(DASK_MISSING_MESSAGE) from error
    try:
        return distributed.default_client()
    except ValueError as error:  # "No clients found"
        raise ValueError(NO_CLIENT_MESSAGE) from error


def _dask_frame_types() -> tuple:
    try:
        import dask.dataframe as dd
    except ImportError:  # dask[array] without pandas
        return ()
    return dd.DataFrame, dd.Series


def as_dask_rows(X, name: str = "X"):
    """``(X, feature names or None)``: a 2-D Dask array, row chunks known, one block of columns.

    A Dask DataFrame's columns must be numeric (:func:`~._threshold.refuse_text_columns`); its
    partitions become the blocks of rows.
    """
    import dask.array as da

    frames = _dask_frame_types()
    names = None
    if frames and isinstance(X, frames[0]):
        refuse_text_columns(X, "DaskQuantileBoostingClassifier")
        names = np.asarray([str(column) for column in X.columns], dtype=object)
        X = X.to_dask_array(lengths=True)
    elif not isinstance(X, da.Array):
        raise TypeError(DASK_INPUT_MESSAGE.format(name=name, kinds="dask.array.Array or dask.dataframe.DataFrame",
                                                  type_name=type(X).__name__, chunks="(rows_per_partition, -1)"))
    if X.ndim != 2:
        raise ValueError(NOT_2D_MESSAGE.format(ndim=X.ndim, shape=X.shape))
    if X.dtype.kind not in "biuf":
        raise TypeError(NOT_NUMERIC_MESSAGE.format(dtype=X.dtype))
    if any(np.isnan(size) for size in X.chunks[0]):
        X = X.compute_chunk_sizes()
    return X.rechunk({1: -1}), names


def as_dask_labels(y, row_chunks, name: str = "y"):
    """``y`` (or another column, ``name``: ``sample_weight``) as a 1-D Dask array with the row blocks ``row_chunks``."""
    import dask.array as da

    frames = _dask_frame_types()
    if frames and isinstance(y, frames[1]):
        y = y.to_dask_array(lengths=True)
    elif not isinstance(y, da.Array):
        raise TypeError(DASK_INPUT_MESSAGE.format(name=name, kinds="dask.array.Array or dask.dataframe.Series",
                                                  type_name=type(y).__name__, chunks="X.chunks[0]"))
    if any(np.isnan(size) for size in y.chunks[0]):
        y = y.compute_chunk_sizes()
    if y.ndim != 1 or y.shape[0] != sum(row_chunks):
        raise ValueError(LABELS_LENGTH_MESSAGE.format(name=name, got=y.shape, expected=sum(row_chunks)))
    return y if y.chunks[0] == tuple(row_chunks) else y.rechunk((tuple(row_chunks),))


def _weight_summary(block) -> np.ndarray:
    """``(non-finite, negative, smallest, total)`` of one block of weights (float64; inf, 0 for an empty block)."""
    block = np.asarray(block, dtype=np.float64)
    finite = block[np.isfinite(block)]
    return np.array([block.size - finite.size, np.count_nonzero(finite < 0), finite.min() if finite.size else np.inf,
                     finite.sum()])


def as_dask_weights(client, sample_weight, row_chunks):
    """``sample_weight`` as float64 Dask blocks of ``X``'s rows, checked on the workers for what
    :func:`~quantile_surrogate._utils.checks.check_sample_weight` refuses, with its messages (one
    computation; four numbers per partition reach the client)."""
    from dask import delayed

    weight = as_dask_labels(sample_weight, row_chunks, "sample_weight")
    if weight.dtype.kind not in "biuf":
        raise TypeError(WEIGHT_TYPE_MESSAGE.format(name="sample_weight", type_name=f"a Dask array of {weight.dtype}"))
    weight = weight.astype(np.float64)
    parts = np.array(client.gather(client.compute(
        [delayed(_weight_summary, pure=True)(block) for block in weight.to_delayed().ravel()])))
    nonfinite, negative, total = int(parts[:, 0].sum()), int(parts[:, 1].sum()), float(parts[:, 3].sum())
    if nonfinite:
        raise ValueError(WEIGHT_NONFINITE_MESSAGE.format(name="sample_weight", count=nonfinite))
    if negative:
        raise ValueError(WEIGHT_NEGATIVE_MESSAGE.format(name="sample_weight", count=negative, low=parts[:, 2].min()))
    if not total > 0:
        raise ValueError(WEIGHT_ZERO_MESSAGE.format(name="sample_weight"))
    return weight


def worker_ranks(client) -> list:
    """The workers' addresses in the order ``xgboost.dask`` gives them ranks.

    XGBoost (3.x, ``xgboost.dask.CommunicatorContext``) sorts its workers by the task id
    ``"[xgboost.dask-{name}]:{address}"``; the same order here puts the first partitions on rank 0.
    Each worker reports its own name (``scheduler_info`` lists only 5 workers by default since
    distributed 2025.4, and older releases take no ``n_workers``).
    """
    names = client.run(_worker_name)
    return sorted(names, key=lambda address: f"[xgboost.dask-{names[address]}]:{address}")


def _worker_name(dask_worker):
    return dask_worker.name


def _same(block):
    return block


def pin_partitions(client, arrays):
    """``arrays`` (Dask arrays with the same row blocks) computed on the workers, block by block, with
    block ``i`` of every array on the same worker: consecutive blocks, balanced by rows, on the workers
    in :func:`worker_ranks` order (a block goes to the worker whose share of the rows holds its middle row).

    Why: XGBoost's bins, its histogram sums and the order of the rows across workers (the point
    quantile's tied rows) follow which worker holds which block, and Dask's own placement can change
    from one ``persist`` to the next; fixed by the rows, the same seed on the same workers gives the same
    model, and the rows' order across ranks is their order in ``X``. A block already on its worker is
    used as it is; one elsewhere is copied there (the restriction is strict, as for ``xgboost.dask``'s
    own training tasks). Returns the arrays, each made of its computed blocks, with its own chunks.
    """
    from dask import delayed
    from dask.base import tokenize

    workers = worker_ranks(client)
    sizes = np.asarray(arrays[0].chunks[0], dtype=np.float64)
    middle = (np.cumsum(sizes) - sizes / 2) / max(sizes.sum(), 1.0)
    owner = np.minimum((middle * len(workers)).astype(np.int64), len(workers) - 1)
    blocks = [array.to_delayed().ravel() for array in arrays]
    futures = [[None] * len(owner) for _ in arrays]
    for rank, address in enumerate(workers):
        parts = [(a, i) for a in range(len(arrays)) for i in np.flatnonzero(owner == rank)]
        # A key of its own per (block, worker): a key that exists already stays wherever it is. One
        # computation per worker for all arrays, so that tasks they share (X and y drawn together) run once.
        tasks = [delayed(_same)(blocks[a][i], dask_key_name=f"pinned-{tokenize(blocks[a][i].key, address)}")
                 for a, i in parts]
        for (a, i), future in zip(parts, client.compute(tasks, workers=[address], allow_other_workers=False)):
            futures[a][i] = future
    return [_from_futures(done, array) for array, done in zip(arrays, futures)]


def _from_futures(futures, like):
    """A Dask array with ``like``'s chunks whose row block ``i`` is ``futures[i]`` (empty blocks kept, as
    ``da.concatenate`` would not: the blocks' indices are the partitions' names)."""
    from dask.array.core import Array
    from dask.base import tokenize

    name = "pinned-" + tokenize([future.key for future in futures])
    rest = (0,) * (like.ndim - 1)
    return Array({(name, i) + rest: future for i, future in enumerate(futures)}, name, chunks=like.chunks,
                 dtype=like.dtype)


def take_partitions(array, parts):
    """The partitions ``parts`` (ascending) of ``array``, concatenated; ``array`` itself when that is all of them."""
    import dask.array as da

    parts = [int(p) for p in parts]
    if parts == list(range(array.numblocks[0])):
        return array
    return da.concatenate([array.blocks[p] for p in parts], axis=0)


def _margins_after_each_tree(booster, X, first: int, last: int) -> np.ndarray:
    """This partition's margins after ``first``, ``first + 1``, ..., ``last`` trees: (rows, last - first + 1) float32.

    Each tree's own output (predicted with ``base_margin`` 0) is added in float32, in tree order: the
    sum XGBoost itself forms, so each column equals ``booster[:n].predict(..., output_margin=True)``
    bit for bit, at one tree's cost per round instead of ``n``.
    """
    import xgboost as xgb

    margins = booster.predict(xgb.DMatrix(X, missing=np.nan), iteration_range=(0, first), output_margin=True)
    zero = xgb.DMatrix(X, missing=np.nan, base_margin=np.zeros(X.shape[0]))
    columns = [margins]
    for tree in range(first, last):
        margins = margins + booster.predict(zero, iteration_range=(tree, tree + 1), output_margin=True)
        columns.append(margins)
    return np.stack(columns, axis=1)


class DaskBoosting:
    """``XGBoostBackend``'s training calls through ``xgboost.dask`` on ``client``, with its ``params``."""

    def __init__(self, client, params: dict):
        try:
            from xgboost import dask as dxgb
        except ImportError as error:
            raise ImportError(DASK_MISSING_MESSAGE) from error
        self.client, self.params, self.dxgb = client, dict(params), dxgb

    def matrix(self, X, y, weight=None):
        return self.dxgb.DaskDMatrix(self.client, X, y, weight=weight, missing=np.nan)

    def fit_logloss(self, dtrain, rounds: int, positives, rows):
        """``rounds`` of ``binary:logistic``, intercept the label mean ``positives / rows`` unless ``params`` set one.

        The mean is what XGBoost (3.x) estimates on one machine (``float32(mean(y))``; with row
        weights the weighted mean, ``positives`` and ``rows`` their weights); on several workers it
        combines the workers' estimates in float32, which can land one ulp away and shift every margin
        by about 1e-7. Exact counts make the start independent of the partitioning.
        """
        params = {"base_score": positives / rows, **self.params, "objective": "binary:logistic"}
        return self.dxgb.train(self.client, params, dtrain, num_boost_round=rounds, verbose_eval=False)["booster"]

    def continue_training(self, booster, dtrain, objective, rounds: int):
        """``rounds`` more trees on ``objective`` (each worker's call sets the global threshold)."""
        if rounds <= 0:
            return booster
        params = {**self.params, "disable_default_eval_metric": 1}
        # A copy: with workers in this process the booster could be continued in place.
        return self.dxgb.train(self.client, params, dtrain, num_boost_round=rounds, obj=objective,
                               xgb_model=booster.copy(), verbose_eval=False)["booster"]

    def margins(self, booster, X):
        """The raw scores ``f(x)`` of a Dask array, as a lazy float64 Dask array."""
        return self.dxgb.predict(self.client, booster, X, output_margin=True).astype(np.float64)

    def held_out_margins(self, booster, X, first: int, last: int) -> np.ndarray:
        """The margins of ``X`` after ``first..last`` trees, gathered: (rows, last - first + 1) float32, in row order.

        One task per partition (:func:`_margins_after_each_tree`); the client receives
        ``4 (last - first + 1)`` bytes per row.
        """
        from dask import delayed

        model = delayed(booster, pure=False, traverse=False)
        tasks = [delayed(_margins_after_each_tree, pure=False)(model, block, first, last)
                 for block in X.to_delayed().ravel()]
        return np.concatenate(self.client.gather(self.client.compute(tasks)), axis=0)
