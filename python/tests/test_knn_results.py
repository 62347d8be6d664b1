# test_knn_results.py: where cask.knn's results go, and what a repeated call keeps.
# - device="gpu": the results stay in GPU memory, written there by cask's GPU tasks (no
#   byte through the host). On simulated GPUs (always run, in a child process with
#   CASK_SIM_GPUS, the fake DLPack producer of test_gpu.py) the "GPU memory" is host
#   memory from a stand-in for CuPy's allocator; on real GPUs with CuPy: SKIP, saying
#   why, as in test_gpu.py.
# - host results: NumPy arrays over blocks of host memory that the extension reuses once
#   every view of them is dropped (pinned with real GPUs), never while one lives.
# - method auto's decision is kept for a sample seen again, bit for bit (knn_memo.c).
import textwrap

import numpy as np
import pytest

from test_gpu import _cupy
from test_knn_gpu import _sim

import cask
from cask import _knn
from cask._lib import _cask

STAND_IN = '''
import cask._gpu
allocated = []
def _empty(shape, dt, dev):        # CuPy's part: GPU memory (a simulated GPU's is host)
    o = np.empty(shape, dt)
    allocated.append(dev)
    return o, o.ctypes.data
cask._gpu._device_empty = _empty
'''


def _sim_results(body, ngpu=1):
    return _sim(STAND_IN + textwrap.dedent(body), ngpu)


def _points(n, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return np.stack([np.degrees(np.arcsin(rng.uniform(-1, 1, n))),
                     rng.uniform(-180, 180, n)], axis=1).astype(dtype)


def test_gpu_results_are_written_on_the_gpu_with_the_answers_of_host_results():
    out = _sim_results('''
        import cask
        obs, ref = points(6000, 1), points(1500, 2)
        cases = [(1, "brute", None), (1, "auto", None), (3, "pruned", None), (2, "brute", None),
                 (1, "brute", 500), (4, "brute", 400), (5, "pruned", 700)]
        for k, method, rc in cases:
            want = cask.knn(obs, ref, k=k, method=method, ref_chunk=rc)
            for inputs in [(FakeCuda(obs), FakeCuda(ref)), (obs, ref)]:
                cask.transfer_stats(reset=True)
                got = cask.knn(*inputs, k=k, method=method, ref_chunk=rc, device="gpu")
                s = cask.transfer_stats()
                for g, w, dt in zip(got, want, (np.int32, np.float32)):
                    assert g.dtype == dt and g.shape == w.shape, (g.dtype, g.shape)
                    np.testing.assert_array_equal(g, w)
                # nothing comes back to the host; GPU points do not move either
                assert s["bytes_d2h"] == 0, (k, method, rc, s)
                if inputs[0] is not obs:
                    assert s["bytes_h2d"] == 0, (k, method, rc, s)
        assert allocated and set(allocated) == {0}
        print("ok")
    ''')
    assert "ok" in out


def test_gpu_results_go_to_the_gpu_asked_for():
    out = _sim_results('''
        import cask
        obs, ref = points(5000, 3), points(1200, 4)
        for k, rc in [(1, None), (1, 300), (3, None)]:
            want = cask.knn(obs, ref, k=k, ref_chunk=rc)
            for on, device in [(1, "gpu"), (0, "gpu:1"), (1, "cuda:0")]:
                allocated.clear()
                cask.transfer_stats(reset=True)
                got = cask.knn(FakeCuda(obs, device=on), FakeCuda(ref, device=on), k=k,
                               ref_chunk=rc, device=device)
                s = cask.transfer_stats()
                # "gpu": the inputs' GPU; "gpu:N" that one
                assert allocated == [int(device[-1]) if ":" in device else on] * 2
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])
                assert s["bytes_d2h"] == 0 and s["bytes_h2d"] == 0, s
        print("ok")
    ''', ngpu=2)
    assert "ok" in out


def test_gpu_results_without_gpu_workers_are_computed_on_the_host_and_copied(monkeypatch):
    if _cask.info()["ngpus"] > 0:
        pytest.skip("cask's runtime has GPU workers (the suite python sets CASK_NGPU=0)")
    made = []

    def empty(shape, dt, dev):
        o = np.full(shape, 7, dt)
        made.append(dev)
        return o, o.ctypes.data
    monkeypatch.setattr("cask._gpu._device_empty", empty)
    obs, ref = _points(3000, 5), _points(300, 6)
    want = cask.knn(obs, ref, k=2)
    got = cask.knn(obs, ref, k=2, device="gpu:0")
    assert made == [0, 0]
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_bad_devices_and_result_addresses_are_value_errors():
    obs = _points(100, 7)
    for device in ("tpu", "gpu:x", "cpu:1", 3):
        with pytest.raises(ValueError, match="device"):
            cask.knn(obs, obs, device=device)
    i, d = np.empty(100, np.int32), np.empty(100, np.float32)
    args = (obs, obs, 1, "brute", True, 0, 0, True)
    ngpus = _cask.info()["ngpus"]
    with pytest.raises(ValueError, match=f"results on GPU {ngpus}: cask's runtime has"):
        _cask.knn(*args, i.ctypes.data, d.ctypes.data, None, None, ngpus)
    if ngpus:
        with pytest.raises(ValueError, match="addresses"):
            _cask.knn(*args, 0, d.ctypes.data, None, None, 0)
        with pytest.raises(ValueError, match="addresses"):
            _cask.knn(*args, i, d, None, None, 0)
    with pytest.raises(ValueError, match="writable C-contiguous"):
        _cask.knn(*args, b"\0" * 400, d, None, None)
    np.testing.assert_array_equal(cask.knn(obs, obs)[0], np.arange(100))   # still works


def test_bad_devices_on_simulated_gpus():
    _sim('''
        import pytest, cask
        from cask._lib import _cask
        obs = points(100, 7)
        i, d = np.empty(100, np.int32), np.empty(100, np.float32)
        args = (obs, obs, 1, "brute", True, 0, 0, True)
        with pytest.raises(ValueError, match="results on GPU 1: cask's runtime has 1"):
            _cask.knn(*args, i.ctypes.data, d.ctypes.data, None, None, 1)
        with pytest.raises(ValueError, match="addresses"):
            _cask.knn(*args, 0, d.ctypes.data, None, None, 0)
        with pytest.raises(ValueError, match="addresses"):
            _cask.knn(*args, i, d, None, None, 0)
        print("ok")
    ''')


def test_host_results_reuse_a_block_only_once_every_view_is_dropped():
    obs, ref = _points(20000, 8), _points(500, 9)
    _cask.host_blocks_clear()
    first = cask.knn(obs, ref, k=2)
    kept_index, kept_dist = first[0].copy(), first[1].copy()
    _, _, hits, misses = _cask.host_blocks()
    second = cask.knn(obs[::-1].copy(), ref, k=2)   # `first` lives: a block of its own
    assert _cask.host_blocks()[2:] == (hits, misses + 1)
    np.testing.assert_array_equal(first[0], kept_index)   # untouched by the next call
    np.testing.assert_array_equal(first[1], kept_dist)
    np.testing.assert_array_equal(second[0], kept_index[::-1])
    assert first[0].flags.writeable and first[0].flags.c_contiguous
    view = first[1][5:]                              # a view keeps the block too
    del first
    third = cask.knn(obs, ref, k=2)
    assert _cask.host_blocks()[2:] == (hits, misses + 2)
    np.testing.assert_array_equal(view, kept_dist[5:])
    np.testing.assert_array_equal(third[0], kept_index)
    del second                                       # its block is free: reused
    fourth = cask.knn(obs, ref, k=2)
    assert _cask.host_blocks()[2:] == (hits + 1, misses + 2)
    np.testing.assert_array_equal(fourth[1], kept_dist)
    np.testing.assert_array_equal(view, kept_dist[5:])
    del view, third, fourth
    kept, nbytes, _, _ = _cask.host_blocks()
    assert kept == 3 and nbytes >= 3 * 20000 * 2 * 8
    _cask.host_blocks_clear()
    assert _cask.host_blocks()[:2] == (0, 0)


def test_host_results_of_other_sizes_do_not_share_a_block():
    obs, ref = _points(4000, 10), _points(300, 11)
    a = cask.knn(obs, ref, k=1)
    del a
    b = cask.knn(obs[:1000], ref, k=1)
    c = cask.knn(obs, ref, k=3)
    assert b[0].shape == (1000,) and c[0].shape == (4000, 3)
    np.testing.assert_array_equal(b[0], cask.knn(obs, ref)[0][:1000])
    with pytest.raises(ValueError, match="at least 1 byte"):
        _cask.host_block(0)


def test_auto_decides_once_for_the_same_sample():
    obs, ref = _points(8192, 12), _points(2048, 13)
    _cask.knn_memo_clear()
    r0, e0 = _cask.knn_memo()
    want = cask.knn(obs, ref, method="auto")
    got = cask.knn(obs, ref, method="auto")
    r1, e1 = _cask.knn_memo()
    assert (r1 - r0, e1 - e0) == (1, 1)
    np.testing.assert_array_equal(got[0], want[0])
    # another row in the sample (row 0 is sampled): estimated again
    moved = obs.copy()
    moved[0] = [10.0, 20.0]
    cask.knn(moved, ref, method="auto")
    assert _cask.knn_memo()[1] == e1 + 1
    # the same points another size (k), and the same sample in other points: decided
    # by their own estimate, and answers as each method's
    for k in (1, 3):
        i, d = cask.knn(obs, ref, k=k)
        np.testing.assert_array_equal(i, cask.knn(obs, ref, k=k, method="brute")[0])
    _cask.knn_memo_clear()


def test_auto_without_the_memo_chooses_the_same():
    obs, ref = _points(20000, 14), _points(3000, 15)
    runs = []
    for _ in range(2):
        _cask.knn_memo_clear()
        runs.append(_cask.knn(obs, ref, 1, "auto", True, 0, 0, True,
                              np.empty(20000, np.int32), np.empty(20000, np.float32),
                              None, None))
    runs.append(_cask.knn(obs, ref, 1, "auto", True, 0, 0, True, np.empty(20000, np.int32),
                          np.empty(20000, np.float32), None, None))   # recalled
    assert runs[0] == runs[1] == runs[2]


# ---- real GPUs ----

def test_cupy_results_stay_on_the_gpu():
    cupy = _cupy()
    obs, ref = _points(30000, 16), _points(3000, 17)
    want = cask.knn(obs, ref, k=3)
    go, gr = cupy.asarray(obs), cupy.asarray(ref)
    cask.knn(go, gr, k=3, device="gpu")
    cask.transfer_stats(reset=True)
    got = cask.knn(go, gr, k=3, method="pruned", device="gpu")
    s = cask.transfer_stats()
    assert isinstance(got[0], cupy.ndarray) and got[0].dtype == np.int32
    assert got[1].shape == (30000, 3) and got[1].dtype == np.float32
    assert int(got[0].device.id) == int(go.device.id)
    cupy.testing.assert_array_equal(got[0], want[0])
    cupy.testing.assert_array_equal(got[1], want[1])
    assert s["bytes_d2h"] == 0 and s["bytes_h2d"] == 0, s
    got1 = cask.knn(obs, ref, device="gpu")          # host points, GPU results
    cupy.testing.assert_array_equal(got1[0], cask.knn(obs, ref)[0])
