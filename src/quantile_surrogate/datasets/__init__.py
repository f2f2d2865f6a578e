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
    "SHA256",
    "HOUSING_COLUMNS",
]

SHA256 = {
    "ionosphere.csv": "fd6dd7864b55d56dac0a1e6e24af9ccc35bf2555ac79af8ab9f3d1daa065ab83",
    "housing.data": "e3e36f7b9e5435f9eb8320e106aebad00031fefa3064527da0c71dec59e49b76",
    "10_cover.npz": "945a097c3542ae81a551bf1c06dcad78a755d94f84fcaf1d60687e42d1a656df",
}

HOUSING_COLUMNS = (
    "CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT", "MEDV",
)

DATA_HOME_VARIABLE = "QUANTILE_SURROGATE_DATA"


def _checked_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    expected = SHA256[path.name]
    if digest != expected:
        raise OSError(f"{path} has sha256 {digest}, expected {expected}: the file is damaged or was replaced.")
    return raw


def _packaged(name: str) -> Path:
    return Path(str(resources.files(__package__).joinpath("data", name)))


def load_ionosphere(*, positive: str = "g"):
    """UCI Ionosphere (Sigillito et al. 1989; CC BY 4.0): 351 rows, 34 features.

    Returns ``(X, y)``: ``X`` float64 of shape (351, 34), ``y`` int64 in {0, 1} with
    ``y = 1`` for class ``positive`` (``"g"``, 225 rows, by default; ``"b"`` has 126).
    Column 2 is constant 0 in the source and is kept, as the paper does not say otherwise.
    """
    if positive not in ("g", "b"):
        raise ValueError(f"`positive` must be 'g' or 'b'; got {positive!r}.")
    text = _checked_bytes(_packaged("ionosphere.csv")).decode()
    rows = [line.split(",") for line in text.strip().splitlines()]
    X = np.array([[float(v) for v in row[:-1]] for row in rows])
    y = np.array([row[-1].strip() == positive for row in rows], dtype=np.int64)
    return X, y


def load_housing(*, label: str = "chas"):
    """Boston Housing (UCI ``housing.data``): 506 rows, made binary as the paper's table suggests.

    ``label="chas"`` (default): ``y = CHAS`` (35 positives) and ``X`` the other 13 columns
    (MEDV included, CHAS removed), shape (506, 13). ``label="raw"`` returns the (506, 14)
    table with no label, as ``(X, None)``, for other experiments.

    The data set's feature ``B`` encodes a racist assumption; UCI withdrew the data and
    scikit-learn removed it in 1.2. Use it only to reproduce the paper.
    """
    if label not in ("chas", "raw"):
        raise ValueError(f"`label` must be 'chas' or 'raw'; got {label!r}.")
    from io import StringIO

    table = np.loadtxt(StringIO(_checked_bytes(_packaged("housing.data")).decode()))
    if label == "raw":
        return table, None
    chas = HOUSING_COLUMNS.index("CHAS")
    y = table[:, chas].astype(np.int64)
    X = np.delete(table, chas, axis=1)
    return X, y


def cover_path(data_home: str | os.PathLike | None = None) -> Path:
    """Where ``10_cover.npz`` lives: ``data_home``, ``$QUANTILE_SURROGATE_DATA``, the source checkout's
    ``data/cover/`` (where the repository commits it), in that order.
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
    raise FileNotFoundError(
        f"10_cover.npz was not found (looked in {searched}). Pass data_home= or set ${DATA_HOME_VARIABLE} "
        "to the folder that holds it; it is committed in the repository under data/cover/."
    )


def load_cover(data_home: str | os.PathLike | None = None):
    """UCI Covertype, class 4 (y = 1) against class 2 (y = 0): the stand-in for KDD Cup 2008.

    KDD Cup 2008 cannot be had here; this is the closest real substitute at hand (large,
    0.96 % positive). Prepared by ODDS ("ForestCover", 10 quantitative attributes) and
    redistributed by ADBench. Returns ``X`` float64 of shape (286048, 10), unscaled, and
    ``y`` int64 with 2,747 positives. Loaded lazily from :func:`cover_path`.
    """
    path = cover_path(data_home)
    from io import BytesIO

    with np.load(BytesIO(_checked_bytes(path))) as data:
        return data["X"].astype(np.float64), data["y"].astype(np.int64)


def make_gaussian_mixture(n_samples: int = 6000, *, prior: float = 0.1, random_state=None):
    """The paper's synthetic data (section 5.2): a 2-D mixture of isotropic Gaussians, p(y = 1) = ``prior``.

    The positives form one unit-variance cluster at the origin. The negatives are a mixture
    of a large cluster just above the positives (at (0, 3), 90 % of them) and a small one
    far below and to the left (at (-3, -6), 10 %). Logistic regression fits both negative
    clusters and tilts its boundary towards the far one; moved to a high recall it lets much
    of the near cluster in. A line that ignores the far cluster does far better at the same
    recall: on 6000 rows, precision at recall 0.95 is about 0.14 for thresholded logistic
    regression and about 0.38 for the best line (0.17 and 0.43 at recall 0.9; the paper's
    figure reports 0.13 and 0.37). Labels are in {0, 1}.

    Returns ``(X, y)`` with ``X`` float64 of shape (n_samples, 2).
    """
    if not 0 < prior < 1:
        raise ValueError(f"`prior` must be in (0, 1); got {prior}.")
    rng = np.random.default_rng(random_state)
    y = (rng.random(n_samples) < prior).astype(np.int64)
    far = rng.random(n_samples) < 0.1
    centres = np.where(far[:, None], [[-3.0, -6.0]], [[0.0, 3.0]])
    centres = np.where(y[:, None] == 1, [[0.0, 0.0]], centres)
    X = centres + rng.standard_normal((n_samples, 2))
    return X, y
