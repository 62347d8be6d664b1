"""cask.knn: exact nearest neighbours on the sphere, as the cask-knn program finds them
(the same task graph, chunk sizes and method choice: the same answers)."""
from __future__ import annotations

import numpy as np

from ._lib import _cask


def _points(x, name, degrees):
    if hasattr(x, "__cuda_array_interface__"):
        x = x.get() if hasattr(x, "get") else np.asarray(x.cpu())
    a = np.asarray(x)
    if a.dtype not in (np.float32, np.float64):
        if a.dtype.kind in "iu":
            a = a.astype(np.float64)
        else:
            raise TypeError(f"cask.knn: {name} must be float32 or float64, not {a.dtype}")
    if a.ndim != 2 or a.shape[1] != 2 or a.shape[0] < 1:
        raise ValueError(f"cask.knn: {name} must be a non-empty (n, 2) array of "
                         f"(latitude, longitude), not shape {a.shape}")
    a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="), copy=False))
    lim = (90.0, 180.0) if degrees else (np.pi / 2, np.pi)
    lat, lon = a[:, 0], a[:, 1]
    if not (np.isfinite(a).all() and (np.abs(lat) <= lim[0]).all()
            and (np.abs(lon) <= lim[1]).all()):
        raise ValueError(f"cask.knn: {name} has values outside latitude [-{lim[0]:g}, "
                         f"{lim[0]:g}], longitude [-{lim[1]:g}, {lim[1]:g}] or not finite")
    return a


def knn(obs, ref, k=1, method="auto", *, units="km", degrees=True, chunk=None,
        ref_chunk=None):
    """The k nearest references of each observation by great-circle distance.

    obs: (n, 2), ref: (m, 2) arrays of (latitude, longitude), float32 or float64, in
    degrees (degrees=False: radians); NumPy, or anything NumPy reads (CuPy arrays are
    copied to the host). method: "auto" (pruned when a sample says it pays), "brute"
    or "pruned" (the same answers). units: "km" (Earth radius 6371.0088 km) or "rad".

    Returns (index, distance): int32 and float32 arrays of shape (n,) for k=1, else
    (n, k), nearest first, ties to the lower index (index -1 and distance NaN where
    m < k), exactly what ``cask-knn --k K --method M`` writes.
    """
    if units not in ("km", "rad"):
        raise ValueError("cask.knn: units is 'km' or 'rad'")
    k = int(k)
    if not 1 <= k <= _cask.KNN_KMAX:
        raise ValueError(f"cask.knn: k must be 1..{_cask.KNN_KMAX}")
    o = _points(obs, "obs", degrees)
    r = _points(ref, "ref", degrees)
    index = np.empty((o.shape[0], k), np.int32)
    dist = np.empty((o.shape[0], k), np.float32)
    _cask.knn(o, r, k, method, units == "km", int(chunk or 0), int(ref_chunk or 0),
              bool(degrees), index, dist)
    if k == 1:
        return index[:, 0], dist[:, 0]
    return index, dist
