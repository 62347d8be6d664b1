"""cask.dask.get against Dask's threaded scheduler: the same results on Dask's example
graphs (tuples, the Task/Alias/DataNode spec, dask.array, dask.bag, dask.delayed),
exceptions raised as Dask raises them, and Ctrl-C."""
import _thread
import threading
import time

import pytest

dask = pytest.importorskip("dask", reason="no Dask: the Dask bridge is not tested")
import dask.threaded  # noqa: E402

import cask.dask  # noqa: E402


def inc(x):
    return x + 1


def add(x, y):
    return x + y


def both(get, dsk, keys):
    want = dask.threaded.get(dsk, keys)
    got = get(dsk, keys)
    assert got == want
    return got


def test_dask_documentation_graph_of_tuples():
    dsk = {"x": 1, "y": 2, "z": (inc, "x"), "w": (add, "z", "y")}
    assert both(cask.dask.get, dsk, "w") == 4
    assert both(cask.dask.get, dsk, ["w", "y"]) == (4, 2)
    assert both(cask.dask.get, dsk, [["w"], ["z", "x"]]) == ((4,), (2, 1))


def test_nested_tuples_lists_and_aliases():
    dsk = {"a": 1, "b": (inc, "a"), "c": "b", "d": (sum, ["a", "b", (inc, "c")]),
           ("t", 0): (add, "d", 10), "e": (add, ("t", 0), "c")}
    both(cask.dask.get, dsk, ["e", ("t", 0), "c"])


def test_task_spec_graph():
    ts = pytest.importorskip("dask._task_spec", reason="Dask before 2024.12: no task spec")
    dsk = {"x": ts.DataNode("x", 3),
           "y": ts.Task("y", inc, ts.TaskRef("x")),
           "z": ts.Alias("z", "y"),
           "w": ts.Task("w", add, ts.TaskRef("z"), ts.TaskRef("x")),
           "v": ts.Task("v", add, ts.TaskRef("w"), 7)}
    want = dask.threaded.get(dsk, ["w", "z", "v"])
    assert want == (7, 4, 14)
    assert cask.dask.get(dsk, ["w", "z", "v"]) == want


def test_dask_array_graphs():
    da = pytest.importorskip("dask.array")
    np = pytest.importorskip("numpy")
    x = da.from_array(np.random.default_rng(1).standard_normal((300, 200)), chunks=(50, 40))
    exprs = [x.sum(), (x + 1).mean(axis=0), x.T @ x, x[::3, 5:50].std(), (x > 0).sum(1)]
    want = dask.compute(*exprs, scheduler="threads")
    got = dask.compute(*exprs, scheduler=cask.dask.get)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_dask_bag_and_delayed():
    db = pytest.importorskip("dask.bag")
    b = db.from_sequence(range(100), npartitions=7)
    expr = b.map(lambda v: v * v).filter(lambda v: v % 3).frequencies()
    assert sorted(expr.compute(scheduler=cask.dask.get)) == sorted(
        expr.compute(scheduler="threads"))
    d = dask.delayed(add)(dask.delayed(inc)(1), dask.delayed(inc)(2))
    assert dask.compute(d, scheduler=cask.dask.get) == dask.compute(d, scheduler="threads")


def test_a_task_exception_is_raised_as_dask_raises_it():
    def boom(x):
        raise ZeroDivisionError("boom %s" % x)
    dsk = {"a": 1, "b": (boom, "a"), "c": (inc, "b")}
    with pytest.raises(ZeroDivisionError, match="boom 1"):
        dask.threaded.get(dsk, "c")
    with pytest.raises(ZeroDivisionError, match="boom 1"):
        cask.dask.get(dsk, "c")
    assert cask.dask.get({"a": (inc, 1)}, "a") == 2


def test_missing_keys_and_cycles():
    with pytest.raises(KeyError):
        cask.dask.get({"a": 1}, "b")
    with pytest.raises((ValueError, RuntimeError)):
        cask.dask.get({"a": (inc, "b"), "b": (inc, "a")}, "a")


def test_many_small_tasks():
    n = 3000
    dsk = {("x", i): (inc, ("x", i - 1)) if i else 0 for i in range(n)}
    dsk.update({("y", i): (add, ("x", i), i) for i in range(n)})
    dsk["s"] = (sum, [("y", i) for i in range(n)])
    assert cask.dask.get(dsk, "s") == dask.threaded.get(dsk, "s")


def test_ctrl_c_interrupts_and_leaves_the_runtime_usable():
    def slow(x):
        time.sleep(0.02)
        return x
    import cask
    n = 200 * cask.info()["ncpu_workers"]                # 4 s of sleeps, whatever the cores
    dsk = {("s", i): (slow, i) for i in range(n)}
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    t = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        cask.dask.get(dsk, list(dsk))
    assert time.perf_counter() - t < 3
    timer.cancel()
    assert cask.dask.get({"a": (inc, 1)}, "a") == 2


def test_ctrl_c_during_an_array_compute(test_kernels):
    np = pytest.importorskip("numpy")
    import cask.array as ca
    k = ca.Kernel(test_kernels, cpu="sleepy")
    import cask
    n = 8 * cask.info()["ncpu_workers"]                  # blocks of 200 ms: 1.6 s in all
    y = ca.map_blocks(k, ca.arange(2.0 * n, chunks=2))
    timer = threading.Timer(0.1, _thread.interrupt_main)
    t = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        y.compute()
    assert time.perf_counter() - t < 1.0                  # at once, not after the run
    timer.cancel()
    # the run ends in the background; the next call waits for it, and works
    np.testing.assert_array_equal(y.compute(), np.arange(2.0 * n))
    assert float(ca.ones(10).sum()) == 10.0
