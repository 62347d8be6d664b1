"""cask: a task-graph parallel runtime (C library libcask) with a Python face.

- ``cask.array``: lazy chunked arrays shaped like ``dask.array`` (computed by cask's
  workers, fused elementwise chains, NumPy in and out).
- ``cask.knn(obs, ref, k=1)``: exact nearest neighbours on the sphere, as ``cask-knn``.
- ``cask.dask.get``: a Dask scheduler: ``dask.compute(x, scheduler=cask.dask.get)``.
- ``cask.compute(a, b, ...)``, ``cask.persist(...)``: several arrays in one graph.
- ``cask.config``: the runtime's settings (also the ``CASK_*`` environment variables).

One runtime per process, started on first use (the first array, search or graph);
``import cask`` starts no thread and loads neither libcask (with CUDA's libraries in a
CUDA build, a tenth of a second) nor NumPy: the extension is loaded on first use.
"""
import sys as _sys


class CaskError(RuntimeError):
    """A cask call failed: args are (message, status code) of the C library."""

__version__ = "0.1.0"
__all__ = ["array", "dask", "config", "knn", "compute", "persist", "shutdown", "info",
           "transfer_stats", "CaskError"]

_LAZY = {"array", "dask", "config"}


def __getattr__(name):
    # submodules imported on first use: NumPy and Dask are loaded only when needed
    if name in _LAZY:
        import importlib
        mod = importlib.import_module("." + name, __name__)
        globals()[name] = mod
        return mod
    raise AttributeError(f"module 'cask' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAZY)


def compute(*arrays, **kwargs):
    """Computes several cask arrays in one graph (shared parts run once) and returns a
    tuple of NumPy arrays, as ``dask.compute``. Other arguments pass through."""
    from .array import compute as _compute
    return _compute(*arrays, **kwargs)


def persist(*arrays):
    """Computes the arrays and keeps their chunks in the runtime; returns them."""
    from .array import persist as _persist
    return _persist(*arrays)


def knn(obs, ref, k=1, method="auto", *, units="km", degrees=True, chunk=None,
        ref_chunk=None, device="cpu"):
    """Nearest references of each observation by great-circle distance: see
    ``cask._knn.knn``. device="gpu" leaves the results on the GPU (CuPy arrays)."""
    from ._knn import knn as _knn_impl
    return _knn_impl(obs, ref, k=k, method=method, units=units, degrees=degrees,
                     chunk=chunk, ref_chunk=ref_chunk, device=device)


def shutdown():
    """Stops the runtime (waits for a compute left running by Ctrl-C). Arrays made
    before can no longer be used; the next use starts a new runtime."""
    ext = _sys.modules.get(__name__ + "._cask")
    if ext is not None:
        ext.shutdown()


def info():
    """The running runtime: CPU workers, GPUs, cores (starts it if needed)."""
    from ._lib import _cask
    return _cask.info()


def transfer_stats(reset=False):
    """Bytes cask's workers copied since the runtime started (or the last reset):
    ``{'bytes_h2d', 'bytes_d2h', 'bytes_peer', 'tasks', 'gpu_tasks'}``, host to GPU,
    GPU to host, GPU to GPU (CASK_STATS prints the same per worker at exit). reset=True
    zeroes the counters after reading them (starts the runtime if needed)."""
    from ._lib import _cask
    return _cask.transfer_stats(bool(reset))


def _started():
    """Whether the runtime runs now (False before the first use: nothing loaded)."""
    ext = _sys.modules.get(__name__ + "._cask")
    return ext is not None and ext.started()


def _at_exit():
    try:
        shutdown()
    except BaseException:
        pass


import atexit as _atexit  # noqa: E402  (a C module: costs nothing)

_atexit.register(_at_exit)
