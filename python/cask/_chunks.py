"""_chunks.py: dtypes and Dask's chunks argument as cask.array understands them."""
import numbers

import numpy as np

_DTYPES = {np.dtype(t) for t in ("float32", "float64", "int32", "int64", "uint32")}


def _check_dtype(dt):
    dt = np.dtype(dt)
    if dt not in _DTYPES:
        raise TypeError(f"cask: dtype {dt} is not supported "
                        "(float32, float64, int32, int64, uint32)")
    return dt


def _normalize_chunks(chunks, shape):
    """Dask's chunks argument as one size per axis, or None (cask chooses)."""
    nd = len(shape)
    if chunks is None or (isinstance(chunks, str) and chunks == "auto"):
        return None
    if isinstance(chunks, dict):
        chunks = tuple(chunks.get(i, chunks.get(i - nd, -1)) for i in range(nd))
    if isinstance(chunks, numbers.Integral):
        chunks = (int(chunks),) * nd
    chunks = tuple(chunks)
    if len(chunks) != nd:
        raise ValueError(f"cask: chunks {chunks} for {nd} axes")
    out = []
    for c, n in zip(chunks, shape):
        if isinstance(c, (tuple, list)):
            c = tuple(int(v) for v in c)
            if sum(c) != n or any(v != c[0] for v in c[:-1]) or c[-1] > c[0]:
                raise ValueError(f"cask: chunks {c} along an axis of {n}: cask's chunks are "
                                 "regular (one size, the last may be shorter)")
            c = c[0]
        if c is None or c == -1 or (isinstance(c, str) and c == "auto"):
            c = n
        c = int(c)
        if c < 1:
            raise ValueError("cask: chunk sizes must be at least 1")
        out.append(min(c, n))
    return tuple(out)




def _expand_chunks(size, shape):
    return tuple(tuple([c] * (n // c) + ([n % c] if n % c else [])) for c, n in zip(size, shape))
