# test_interrupt.py: Ctrl-C as a user sends it: a real SIGINT to the process, from
# another thread, during a long compute (the Dask bridge's and array tests use
# _thread.interrupt_main, which sets the flag without a signal). KeyboardInterrupt comes
# at once, and the runtime stays usable.
import os
import signal
import threading
import time

import numpy as np
import pytest


def _sigint_later(seconds):
    t = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    t.start()
    return t


def test_sigint_during_an_array_compute_raises_and_the_next_compute_works(test_kernels):
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is not Python's KeyboardInterrupt here")
    import cask
    import cask.array as ca
    n = 8 * cask.info()["ncpu_workers"]                 # blocks of 200 ms: 1.6 s in all
    y = ca.map_blocks(ca.Kernel(test_kernels, cpu="sleepy"), ca.arange(2.0 * n, chunks=2))
    t0 = time.perf_counter()
    timer = _sigint_later(0.2)
    with pytest.raises(KeyboardInterrupt):
        y.compute()
    assert time.perf_counter() - t0 < 1.0
    timer.cancel()
    np.testing.assert_array_equal(y.compute(), np.arange(2.0 * n))
    assert float(ca.ones(100, chunks=10).sum()) == 100.0


def test_sigint_during_a_dask_graph_cancels_it():
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        pytest.skip("SIGINT is not Python's KeyboardInterrupt here")
    pytest.importorskip("dask", reason="Dask is not installed")
    import cask
    import cask.dask

    ran = []

    def slow(i):
        ran.append(i)
        time.sleep(0.02)
        return i

    n = 200 * cask.info()["ncpu_workers"]              # 4 s of sleeps
    dsk = {("s", i): (slow, i) for i in range(n)}
    timer = _sigint_later(0.3)
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        cask.dask.get(dsk, list(dsk))
    assert time.perf_counter() - t0 < 3
    timer.cancel()
    k = len(ran)
    time.sleep(0.2)
    assert len(ran) == k, "tasks not started were skipped"
    assert cask.dask.get({"a": (slow, 7)}, "a") == 7
