"""Data sets for the paper's experiments: committed real data and seeded generators.

Nothing here touches the network. Ionosphere and Housing ship inside the package and are
checked against their sha256 on every load. The Covertype stand-in for KDD Cup 2008 is
2.5 MB, kept out of the wheel and found through :func:`cover_path`.

Label choices (the paper states neither; see ``docs/datasets.md`` for the evidence):

- Ionosphere: class ``g`` ("good" radar returns, 225 of 351) is positive.
- Housing: ``CHAS = 1`` (tract bounds the Charles River, 35 of 506) is the label and the
  CHAS column is removed from the features. The data set has a known ethical problem
  (feature ``B``) and was withdrawn by UCI and removed from scikit-learn 1.2; it is used
  here only to reproduce the paper.
"""

from __future__ import annotations

import hashlib
import os
from importlib import resources
from pathlib import Path

import numpy as np

__all__ = [
    "load_ionosphere",
    "load_housing",
    "load_cover",
    "make_gaussian_mixture",
    "cover_path",
    "HOUSING_COLUMNS",
]

# The checksum each load compares a data file with (not public: an integrity check, not data).
SHA256 = {
    "ionosphere.csv": "fd6dd7864b55d56dac0a1e6e24af9ccc35bf2555ac79af8ab9f3d1daa065ab83",
    "housing.data": "e3e36f7b9e5435f9eb8320e106aebad00031fefa3064527da0c71dec59e49b76",
    "10_cover.npz": "945a097c3542ae81a551bf1c06dcad78a755d94f84fcaf1d60687e42d1a656df",
}

#: The 14 columns of ``housing.data`` in file order (``load_housing(label="raw")``); the
#: default ``load_housing()`` removes ``"CHAS"``, its label, and keeps the other 13 in this order.
HOUSING_COLUMNS = (
    "CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT", "MEDV",
)

DATA_HOME_VARIABLE = "QUANTILE_SURROGATE_DATA"

CHECKSUM_MESSAGE = "{path} has sha256 {digest}, expected {expected}: the file is damaged or was replaced."
POSITIVE_MESSAGE = "`positive` must be 'g' or 'b'; got {value!r}."
LABEL_MESSAGE = "`label` must be 'chas' or 'raw'; got {value!r}."
COVER_NOT_FOUND_MESSAGE = ("10_cover.npz was not found (looked in {searched}). Pass data_home= or set ${variable} "
                           "to the folder that holds it; it is committed in the repository under data/cover/.")
PRIOR_MESSAGE = "`prior` must be in (0, 1); got {value}."


def _checked_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    expected = SHA256[path.name]
    if digest != expected:
        raise OSError(CHECKSUM_MESSAGE.format(path=path, digest=digest, expected=expected))
    return raw


def _packaged(name: str) -> Path:
    return Path(str(resources.files(__package__).joinpath("data", name)))


def load_ionosphere(*, positive: str = "g"):
    """UCI Ionosphere (Sigillito et al. 1989; CC BY 4.0): 351 rows, 34 features.

    The data of the paper's table 1 (section 5.1.1). Column 2 is constant 0 in the source
    and is kept, as the paper does not say otherwise.

    Parameters
    ----------
    positive : {"g", "b"}, default="g"
        The class labelled 1: ``"g"`` ("good" radar returns, 225 rows) or ``"b"`` (126 rows).
        The paper does not say which; docs/datasets.md has the evidence for ``"g"``.

    Returns
    -------
    X : ndarray of shape (351, 34), float64
    y : ndarray of shape (351,), int64 in {0, 1}

    Raises
    ------
    ValueError
        If ``positive`` is neither ``"g"`` nor ``"b"``.
    OSError
        If the packaged file does not match its sha256 (damaged or replaced).

    See Also
    --------
    quantile_surrogate.experiments.labels.label_evidence : Which label reproduces the paper's table.

    Examples
    --------
    >>> from quantile_surrogate.datasets import load_ionosphere
    >>> X, y = load_ionosphere()
    >>> X.shape, int(y.sum())
    ((351, 34), 225)
    """
    if positive not in ("g", "b"):
        raise ValueError(POSITIVE_MESSAGE.format(value=positive))
    text = _checked_bytes(_packaged("ionosphere.csv")).decode()
    rows = [line.split(",") for line in text.strip().splitlines()]
    X = np.array([[float(v) for v in row[:-1]] for row in rows])
    y = np.array([row[-1].strip() == positive for row in rows], dtype=np.int64)
    return X, y


def load_housing(*, label: str = "chas"):
    """Boston Housing (UCI ``housing.data``): 506 rows, made binary as the paper's table suggests.

    The data of the paper's table 2 (section 5.1.1). The data set's feature ``B`` encodes a
    racist assumption; UCI withdrew the data and scikit-learn removed it in 1.2. Use it only
    to reproduce the paper.

    Parameters
    ----------
    label : {"chas", "raw"}, default="chas"
        ``"chas"``: ``y = CHAS`` (the tract bounds the Charles River; 35 positives) and ``X``
        the other 13 columns of :data:`HOUSING_COLUMNS` (MEDV included). ``"raw"``: the whole
        (506, 14) table and no label, for other experiments.

    Returns
    -------
    X : ndarray of shape (506, 13), or (506, 14) for ``label="raw"``, float64
    y : ndarray of shape (506,), int64 in {0, 1}; None for ``label="raw"``

    Raises
    ------
    ValueError
        If ``label`` is neither ``"chas"`` nor ``"raw"``.
    OSError
        If the packaged file does not match its sha256.

    Examples
    --------
    >>> from quantile_surrogate.datasets import load_housing
    >>> X, y = load_housing()
    >>> X.shape, int(y.sum())
    ((506, 13), 35)
    >>> load_housing(label="raw")[0].shape
    (506, 14)
    """
    if label not in ("chas", "raw"):
        raise ValueError(LABEL_MESSAGE.format(value=label))
    from io import StringIO

    table = np.loadtxt(StringIO(_checked_bytes(_packaged("housing.data")).decode()))
    if label == "raw":
        return table, None
    chas = HOUSING_COLUMNS.index("CHAS")
    y = table[:, chas].astype(np.int64)
    X = np.delete(table, chas, axis=1)
    return X, y


def cover_path(data_home: str | os.PathLike | None = None) -> Path:
    """Where ``10_cover.npz`` lives: the first folder that holds it.

    Parameters
    ----------
    data_home : str or path-like, optional
        Looked in first; then ``$QUANTILE_SURROGATE_DATA``, then the source checkout's
        ``data/cover/`` (where the repository commits the file).

    Returns
    -------
    pathlib.Path
        The path of ``10_cover.npz``.

    Raises
    ------
    FileNotFoundError
        If none of those folders holds the file (the message lists them).

    Examples
    --------
    >>> from quantile_surrogate.datasets import cover_path
    >>> cover_path().name  # from a source checkout
    '10_cover.npz'
    """
    candidates = []
    if data_home is not None:
        candidates.append(Path(data_home))
    if os.environ.get(DATA_HOME_VARIABLE):
        candidates.append(Path(os.environ[DATA_HOME_VARIABLE]))
    repo = Path(__file__).resolve().parents[3]
    candidates.append(repo / "data" / "cover")
    for folder in candidates:
        if (folder / "10_cover.npz").is_file():
            return folder / "10_cover.npz"
    searched = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(COVER_NOT_FOUND_MESSAGE.format(searched=searched, variable=DATA_HOME_VARIABLE))


def load_cover(data_home: str | os.PathLike | None = None):
    """UCI Covertype, class 4 (y = 1) against class 2 (y = 0): the stand-in for KDD Cup 2008.

    KDD Cup 2008 (the paper's figure 1) cannot be had here; this is the closest real
    substitute at hand (large, 0.96 % positive). Prepared by ODDS ("ForestCover", 10
    quantitative attributes) and redistributed by ADBench. Loaded lazily from
    :func:`cover_path`.

    Parameters
    ----------
    data_home : str or path-like, optional
        A folder holding ``10_cover.npz``; see :func:`cover_path` for where else it is sought.

    Returns
    -------
    X : ndarray of shape (286048, 10), float64, unscaled
    y : ndarray of shape (286048,), int64 in {0, 1}, 2,747 positives

    Raises
    ------
    FileNotFoundError
        If the file is not found (:func:`cover_path`).
    OSError
        If it does not match its sha256.

    Examples
    --------
    >>> from quantile_surrogate.datasets import load_cover
    >>> X, y = load_cover()  # from a source checkout, which holds data/cover/10_cover.npz
    >>> X.shape, int(y.sum())
    ((286048, 10), 2747)
    """
    path = cover_path(data_home)
    from io import BytesIO

    with np.load(BytesIO(_checked_bytes(path))) as data:
        return data["X"].astype(np.float64), data["y"].astype(np.int64)


def make_gaussian_mixture(n_samples: int = 6000, *, prior: float = 0.1, random_state=None):
    r"""The paper's synthetic data (section 5.2): a 2-D mixture of isotropic Gaussians, p(y = 1) = ``prior``.

    The positives form one unit-variance cluster at the origin. The negatives are a mixture
    of a large cluster just above the positives (at (0, 3), 90 % of them) and a small one
    far below and to the left (at (-3, -6), 10 %). Logistic regression fits both negative
    clusters and tilts its boundary towards the far one; moved to a high recall it lets much
    of the near cluster in. A line that ignores the far cluster does far better at the same
    recall: on 6000 rows, precision at recall 0.95 is about 0.14 for thresholded logistic
    regression and about 0.38 for the best line (0.17 and 0.43 at recall 0.9; the paper's
    figure reports 0.13 and 0.37).

    Parameters
    ----------
    n_samples : int, default=6000
        Rows to draw.
    prior : float in (0, 1), default=0.1
        The probability of a positive, p(y = 1).
    random_state : int, numpy Generator or None, default=None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : ndarray of shape (n_samples, 2), float64
    y : ndarray of shape (n_samples,), int64 in {0, 1}

    Raises
    ------
    ValueError
        If ``prior`` is not strictly between 0 and 1.

    See Also
    --------
    quantile_surrogate.experiments.synthetic.run_synthetic : The paper's figure 2 on this data.

    Notes
    -----
    The paper names the mixture but not its components; these are this library's choice:

    .. math::
        y \sim \mathrm{Bernoulli}(\pi), \qquad x \mid y = 1 \sim N(0, I_2), \qquad
        x \mid y = 0 \sim 0.9\, N((0, 3), I_2) + 0.1\, N((-3, -6), I_2).

    Examples
    --------
    >>> from quantile_surrogate.datasets import make_gaussian_mixture
    >>> X, y = make_gaussian_mixture(6000, random_state=0)
    >>> X.shape, round(float(y.mean()), 3)
    ((6000, 2), 0.104)
    """
    if not 0 < prior < 1:
        raise ValueError(PRIOR_MESSAGE.format(value=prior))
    rng = np.random.default_rng(random_state)
    y = (rng.random(n_samples) < prior).astype(np.int64)
    far = rng.random(n_samples) < 0.1
    centres = np.where(far[:, None], [[-3.0, -6.0]], [[0.0, 3.0]])
    centres = np.where(y[:, None] == 1, [[0.0, 0.0]], centres)
    X = centres + rng.standard_normal((n_samples, 2))
    return X, y
