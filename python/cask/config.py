"""cask.config: settings of the runtime, for its next start.

The runtime reads the ``CASK_*`` environment variables (``CASK_NCPU``, ``CASK_NGPU``,
``CASK_LOG``, ``CASK_TRACE``, ... as the C library documents in cask/runtime.h) for
every field not set here. Settings apply when the runtime starts: before the first use,
or after ``cask.shutdown()``.

>>> import cask
>>> cask.config.set(ncpu=2)
>>> cask.config.get()
{'ncpu': 2}
"""
import sys

_FIELDS = {"ncpu", "ngpu", "sim_gpus", "bind", "log_level", "gpu_streams", "stats",
           "progress", "gpu_mem_limit", "host_mem_limit", "trace"}
_LOG_LEVELS = {"error": 0, "warn": 1, "info": 2, "debug": 3, "trace": 4}
_current = {}


def set(**fields):
    """Sets fields for the next start: ncpu, ngpu, sim_gpus, bind, log_level ('error'..
    'trace'), gpu_streams, stats, progress, gpu_mem_limit, host_mem_limit (bytes),
    trace (a path). A value of None removes a field (the environment decides again).
    Raises RuntimeError while the runtime runs (call cask.shutdown() first)."""
    new = dict(_current)
    for k, v in fields.items():
        if k not in _FIELDS:
            raise ValueError(f"cask.config: unknown field {k!r} ({', '.join(sorted(_FIELDS))})")
        if v is None:
            new.pop(k, None)
        else:
            new[k] = v
    _apply(new)
    _current.clear()
    _current.update(new)


def _c_fields(fields=None):
    fields = _current if fields is None else fields
    return {k: (_LOG_LEVELS[v] if k == "log_level" and isinstance(v, str) else v)
            for k, v in fields.items()}


def _apply(fields):
    ext = sys.modules.get(__name__.rpartition(".")[0] + "._cask")
    if ext is not None:        # else given to it when it is loaded (cask._lib)
        ext.configure(_c_fields(fields))


def get():
    """The fields set through cask.config (the environment fills the others)."""
    return dict(_current)


def reset():
    """Clears every field (the environment and defaults decide again)."""
    _apply({})
    _current.clear()
