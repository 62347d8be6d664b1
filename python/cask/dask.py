"""cask.dask: Dask's graphs on cask's scheduler.

>>> import dask, dask.array as da, cask.dask
>>> x = da.ones((1000, 1000), chunks=100)
>>> dask.compute(x.sum(), scheduler=cask.dask.get)
(1000000.0,)

``get(dsk, keys)`` runs any Dask graph (dask.array, dask.bag, dask.delayed; the
``Task``/``Alias``/``DataNode`` nodes of ``dask._task_spec`` and the older tuples) as
one cask graph: each Dask task becomes a cask task that runs the task's Python
callable on one of cask's workers, with the GIL taken only around the call. cask keeps
the dependencies and the results (each dropped once its last consumer ran). The first
exception a task raises is raised again, as Dask's own schedulers do.
"""
from __future__ import annotations

from ._lib import _cask

__all__ = ["get"]


def _flatten(keys):
    if isinstance(keys, list):
        for k in keys:
            yield from _flatten(k)
    else:
        yield keys


def _nested(keys, results):
    if isinstance(keys, list):
        return tuple(_nested(k, results) for k in keys)
    return results[keys]


def _spec_graph(dsk):
    """(keys, callables, deps) for graphs of dask._task_spec (Dask 2024.12 and later):
    every node, tuples converted by Dask's own convert_legacy_graph, is called with the
    dict of its dependencies' results."""
    from dask._task_spec import convert_legacy_graph
    dsk = convert_legacy_graph(dsk)
    keys = list(dsk)
    index = {k: i for i, k in enumerate(keys)}
    calls = [dsk[k] for k in keys]
    deps = [[index[d] for d in node.dependencies] for node in calls]
    return keys, calls, deps


def _tuple_graph(dsk):
    """The same for older Dask (tuples only): Dask's _execute_task runs each."""
    from functools import partial
    from dask.core import _execute_task, get_dependencies
    keys = list(dsk)
    index = {k: i for i, k in enumerate(keys)}
    calls = [partial(_execute_task, dsk[k]) for k in keys]
    deps = [[index[d] for d in get_dependencies(dsk, k)] for k in keys]
    return keys, calls, deps


def get(dsk, keys, **kwargs):
    """A Dask scheduler running on cask's workers: ``dask.compute(x,
    scheduler=cask.dask.get)``, or ``cask.dask.get(graph, keys)`` directly. keys: a key
    or a (nested) list of keys; returns the results in the same structure. Other
    arguments of Dask's schedulers (num_workers, cache...) are accepted and ignored:
    cask's workers are the runtime's (cask.config, CASK_NCPU)."""
    if not isinstance(dsk, dict):
        dsk = dict(dsk.__dask_graph__()) if hasattr(dsk, "__dask_graph__") else dict(dsk)
    try:
        import dask._task_spec  # noqa: F401
        build = _spec_graph
    except ImportError:
        build = _tuple_graph
    names, calls, deps = build(dsk)
    wanted_keys = set(_flatten(keys))
    missing = [k for k in wanted_keys if k not in dsk]
    if missing:
        raise KeyError(missing[0])
    wanted = [k in wanted_keys for k in names]
    results = _cask.run_graph(calls, names, deps, wanted)
    by_key = {k: results[i] for i, k in enumerate(names) if wanted[i]}
    return _nested(keys, by_key)
