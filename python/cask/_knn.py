"""cask.knn: exact nearest neighbours on the sphere, as the cask-knn program finds them
(the same task graph, chunk sizes and method choice: the same answers)."""
from __future__ import annotations

import numpy as np

from . import _gpu
from ._lib import _cask

_AUTO_SAMPLE_OBS, _AUTO_SAMPLE_REF = 256, 2048     # apps/knn/auto_method.[ch]
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _limits(degrees):
    return (90.0, 180.0) if degrees else (np.pi / 2, np.pi)


def _check_shape(name, shape):
    if len(shape) != 2 or shape[1] != 2 or shape[0] < 1:
        raise ValueError(f"cask.knn: {name} must be a non-empty (n, 2) array of "
                         f"(latitude, longitude), not shape {tuple(shape)}")


def _range_error(name, degrees):
    lim = _limits(degrees)
    return ValueError(f"cask.knn: {name} has values outside latitude [-{lim[0]:g}, "
                      f"{lim[0]:g}], longitude [-{lim[1]:g}, {lim[1]:g}] or not finite")


def _points(x, name):
    """Host points as the extension takes them: (n, 2) float32/float64, C-contiguous and
    native-endian; x itself when it is so (no copy). The values are checked in C."""
    a = x if type(x) is np.ndarray else np.asarray(x)
    if a.dtype not in _FLOATS:
        if a.dtype.kind in "iu":
            a = a.astype(np.float64)
        elif a.dtype.kind == "f" and a.dtype.newbyteorder("=") in _FLOATS:
            pass                                # other byte order: swapped below
        else:
            raise TypeError(f"cask.knn: {name} must be float32 or float64, not {a.dtype}")
    _check_shape(name, a.shape)
    if not (a.flags.c_contiguous and a.dtype.isnative):
        a = np.ascontiguousarray(a.astype(a.dtype.newbyteorder("="), copy=False))
    return a


def _gpu_bad(x, degrees):
    """Whether a CuPy / PyTorch (n, 2) tensor has a value out of range or not finite,
    on its GPU. CuPy: the largest magnitude of each column (NaN propagates, so it fails
    the comparison; float32 compares with float32 limits, as on the host): 0.26 ms for
    2^24 rows on the H200, where one reduction over the (n, 2) array with the limits
    broadcast, or over axis 0, took 25 ms (CuPy reduces a short last axis slowly).
    PyTorch: a few kernels."""
    lat, lon = _limits(degrees)
    if _gpu._library_of(x) == "cupy":
        import cupy
        with x.device:
            m = cupy.stack([cupy.abs(x[:, 0]).max(), cupy.abs(x[:, 1]).max()]).get()
        return not (m[0] <= x.dtype.type(lat) and m[1] <= x.dtype.type(lon))
    import torch
    lim = torch.tensor([lat, lon], dtype=x.dtype, device=x.device)
    return not bool((x.abs() <= lim).all())


def _gpu_sample(x, rows):
    """Rows i * (n // rows) of x, i < rows (those auto's estimate reads), to the host."""
    n = x.shape[0]
    step = n // rows
    return np.ascontiguousarray(_gpu._to_host(x[0:rows * step:step] if step else x[:rows]))


def _gpu_points(x, name, degrees, dev):
    """A CUDA tensor that cask's runtime can read in place: (DLPack capsule, sample or
    None, the tensor kept alive). On real GPUs the values are checked there and the
    rows auto's estimate reads come to the host; on simulated GPUs (host memory) the
    extension does both itself."""
    dt = np.dtype(str(x.dtype).replace("torch.", ""))
    if dt not in _FLOATS:
        if dt.kind in "iu":
            x = x.astype("float64") if hasattr(x, "astype") else x.double()
        else:
            raise TypeError(f"cask.knn: {name} must be float32 or float64, not {dt}")
    _check_shape(name, tuple(x.shape))
    sample = None
    if not _cask.info()["simulated_gpus"]:
        if _gpu._library_of(x) not in ("cupy", "torch"):
            raise TypeError(f"cask.knn: {name}: GPU tensors from CuPy or PyTorch "
                            f"(not {type(x).__module__}.{type(x).__name__})")
        x = _gpu._contiguous_and_synced(x)
        if _gpu_bad(x, degrees):
            raise _range_error(name, degrees)
        n = x.shape[0]
        sample = _gpu_sample(x, _AUTO_SAMPLE_OBS if name == "obs"
                             else min(n, _AUTO_SAMPLE_REF))
    else:
        x = _gpu._contiguous_and_synced(x)
    return x.__dlpack__(), sample, x


def _input(x, name, degrees, ngpus):
    """(what the extension takes, sample or None, what to keep alive)."""
    dev = _gpu._cuda_device_of(x)
    if dev is None:
        if hasattr(x, "__cuda_array_interface__"):        # CUDA without DLPack
            x = _gpu._to_host(x)
        return _points(x, name), None, None
    if dev >= ngpus:           # no GPU workers there (CASK_NGPU=0...): one copy over
        return _points(_gpu._to_host(x), name), None, None
    return _gpu_points(x, name, degrees, dev)


def _host_results(n, k):
    """index (int32) and dist (float32) arrays of n x k over one block of host memory
    that the extension keeps and reuses once both are dropped (pinned with real GPUs;
    no page faults in the call after the first): NumPy views, no copy."""
    nk = n * k
    blk = _cask.host_block(8 * nk)
    shape = (n,) if k == 1 else (n, k)
    return (np.frombuffer(blk, np.int32, nk).reshape(shape),
            np.frombuffer(blk, np.float32, nk, 4 * nk).reshape(shape))


def _gpu_of(device, obs, ref):
    """The GPU index device names (cask._gpu._gpu_index); "gpu" alone: that of the
    CUDA inputs (obs first), else 0."""
    dev = _gpu._gpu_index(device)
    if dev is None:
        dev = _gpu._cuda_device_of(obs)
        if dev is None:
            dev = _gpu._cuda_device_of(ref)
    return 0 if dev is None else dev


def knn(obs, ref, k=1, method="auto", *, units="km", degrees=True, chunk=None,
        ref_chunk=None, device="cpu"):
    """The k nearest references of each observation by great-circle distance.

    obs: (n, 2), ref: (m, 2) arrays of (latitude, longitude), float32 or float64, in
    degrees (degrees=False: radians); NumPy, anything NumPy reads, or CUDA tensors
    (CuPy, PyTorch: read in place on their GPU when cask has GPU workers there, else
    copied to the host). method: "auto" (pruned when a sample says it pays), "brute"
    or "pruned" (the same answers). units: "km" (Earth radius 6371.0088 km) or "rad".

    device: "cpu" (the default): the results are NumPy arrays (over host memory that
    cask reuses once they are dropped: pinned with real GPUs). "gpu" (or "cuda",
    "gpu:N", "cuda:N"): CuPy arrays (PyTorch CUDA tensors when only PyTorch is there)
    on GPU N (default: the GPU of the CUDA inputs, else 0), written there by cask's GPU
    tasks, no byte through the host (without GPU workers there: computed on the host
    and copied over).

    Returns (index, distance): int32 and float32 arrays of shape (n,) for k=1, else
    (n, k), nearest first, ties to the lower index (index -1 and distance NaN where
    m < k), exactly what ``cask-knn --k K --method M`` writes.
    """
    on_gpu = device not in ("cpu", None)
    if on_gpu:
        out_dev = _gpu_of(device, obs, ref)       # ValueError for a bad name
    if units not in ("km", "rad"):
        raise ValueError("cask.knn: units is 'km' or 'rad'")
    k = int(k)
    if not 1 <= k <= _cask.KNN_KMAX:
        raise ValueError(f"cask.knn: k must be 1..{_cask.KNN_KMAX}")
    ngpus = 0
    if on_gpu or _gpu._cuda_device_of(obs) is not None or \
            _gpu._cuda_device_of(ref) is not None:
        ngpus = _cask.info()["ngpus"]
    if on_gpu and out_dev >= ngpus:   # no GPU workers there: host results, copied over
        index, dist = knn(obs, ref, k, method, units=units, degrees=degrees, chunk=chunk,
                          ref_chunk=ref_chunk)
        return _gpu._device_copy_of(index, out_dev), _gpu._device_copy_of(dist, out_dev)
    o, osample, okeep = _input(obs, "obs", degrees, ngpus)
    r, rsample, rkeep = _input(ref, "ref", degrees, ngpus)
    n = o.shape[0] if isinstance(o, np.ndarray) else okeep.shape[0]
    args = (o, r, k, method, units == "km", int(chunk or 0), int(ref_chunk or 0),
            bool(degrees))
    if not on_gpu:
        index, dist = _host_results(n, k)
        _cask.knn(*args, index, dist, osample, rsample)
        return index, dist
    shape = (n,) if k == 1 else (n, k)
    index, iptr = _gpu._device_empty(shape, np.int32, out_dev)
    dist, dptr = _gpu._device_empty(shape, np.float32, out_dev)
    _gpu._contiguous_and_synced(dist)   # memory the producer's pool may still be using
    # (index, dist) held by the extension until the search ends (Ctrl-C leaves it running)
    _cask.knn(*args, iptr, dptr, osample, rsample, out_dev, (index, dist))
    del okeep, rkeep
    return index, dist
