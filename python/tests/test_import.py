"""What importing cask costs and starts: at most 50 ms, no thread, no NumPy."""
import subprocess
import sys

PROBE = r"""
import os, sys, time
t = time.perf_counter()
import cask
dt = time.perf_counter() - t
import cask.config
cask.config.set(ncpu=1)
help(cask.knn) if False else None
threads = len(os.listdir('/proc/self/task'))
print(dt, threads, 'numpy' in sys.modules, cask._started(), 'cask._cask' in sys.modules)
"""


def probe():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), int(out[1]), out[2] == "True", out[3] == "True", out[4] == "True"


def test_import_costs_at_most_50_ms():
    best = min(probe()[0] for _ in range(3))
    assert best < 0.050, f"import cask took {best * 1e3:.1f} ms"


def test_import_starts_no_thread_and_no_runtime():
    _, threads, _, started, _ = probe()
    assert threads == 1
    assert not started


def test_import_does_not_import_numpy_or_load_libcask():
    _, _, numpy, _, ext = probe()
    assert not numpy and not ext


def test_runtime_starts_on_first_use_and_stops():
    # (NumPy's own BLAS may start threads of its own as it is imported: counted apart)
    code = ("import os, cask, cask.array as ca; n0 = len(os.listdir('/proc/self/task')); "
            "s0 = cask._started(); ca.ones(4).compute(); "
            "n1 = len(os.listdir('/proc/self/task')); s1 = cask._started(); "
            "cask.shutdown(); n2 = len(os.listdir('/proc/self/task')); "
            "print(s0, s1, cask._started(), n1 > n0, n2 == n0)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True", "False", "True", "True"]


def test_help_and_docstrings():
    import cask
    import cask.array as ca
    for obj in (cask, cask.knn, cask.compute, ca, ca.from_array, ca.Array, ca.map_blocks,
                cask.dask.get, cask.config.set):
        assert obj.__doc__ and len(obj.__doc__) > 20
