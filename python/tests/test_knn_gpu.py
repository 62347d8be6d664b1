# test_knn_gpu.py: cask.knn on points that live on a GPU, read in place (the knn graph
# registers them with cask_data_register_device), and the checks cask.knn makes before
# its graph (in C, on cask's workers; on the GPU for CuPy / PyTorch tensors).
#
# On simulated GPUs (always run): the fake DLPack producer of test_gpu.py hands cask a
# "CUDA" tensor over host memory, in a child process with CASK_SIM_GPUS. On real GPUs
# with CuPy / PyTorch: SKIP, saying why, as in test_gpu.py.
import textwrap

import numpy as np
import pytest

from test_gpu import _cupy, _run_sim

import cask
from cask import _knn
from cask._lib import _cask

POINTS = '''
def points(n, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return np.stack([np.degrees(np.arcsin(rng.uniform(-1, 1, n))),
                     rng.uniform(-180, 180, n)], axis=1).astype(dtype)
'''


def _sim(body, ngpu=1):
    return _run_sim(POINTS + textwrap.dedent(body), ngpu)


def test_gpu_points_are_read_in_place_with_the_answers_of_host_points():
    out = _sim('''
        import cask
        assert cask.info()["ngpus"] == 1 and cask.info()["simulated_gpus"]
        obs, ref = points(6000, 1), points(1500, 2)
        for k, method in [(1, "brute"), (1, "auto"), (3, "pruned"), (2, "brute")]:
            want = cask.knn(obs, ref, k=k, method=method)        # host points
            cask.transfer_stats(reset=True)
            got = cask.knn(FakeCuda(obs), FakeCuda(ref), k=k, method=method)
            s = cask.transfer_stats()
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
            assert isinstance(got[0], np.ndarray) and got[0].dtype == np.int32
            if k == 1 and method == "brute":
                # every task on the GPU: the points never crossed to it, the results
                # came back (index and distance: 8 bytes an observation)
                assert s["bytes_h2d"] == 0, s
                assert s["bytes_d2h"] == 8 * len(obs), s
        import gc; gc.collect()
        assert len(deleted) == 8, deleted          # every tensor's deleter ran, once
        print("ok")
    ''')
    assert "ok" in out


def test_bad_gpu_points_are_clear_errors_and_their_tensors_are_released():
    _sim('''
        import pytest, cask
        ref = points(50, 2)
        for bad in (np.array([[95.0, 0]]), np.array([[np.nan, 0]], np.float32),
                    np.array([[0, np.inf]])):
            with pytest.raises(ValueError, match="obs has values outside latitude"):
                cask.knn(FakeCuda(bad), FakeCuda(ref))
        with pytest.raises(ValueError, match="ref has values outside"):
            cask.knn(FakeCuda(ref), FakeCuda(np.array([[0, -181.0]])))
        with pytest.raises(ValueError, match=r"\\(n, 2\\)"):
            cask.knn(FakeCuda(np.zeros((4, 3))), ref)
        with pytest.raises(TypeError, match="float32 or float64"):
            cask.knn(FakeCuda(np.zeros((4, 2), np.float16)), ref)
        with pytest.raises(ValueError, match="C-contiguous"):
            cask.knn(FakeCuda(np.zeros((4, 2), np.float32), strides=[1, 4]), ref)
        from cask._lib import _cask
        out = np.empty((50, 1), np.int32), np.empty((50, 1), np.float32)
        with pytest.raises(ValueError, match="GPU 2: cask's runtime has 1"):
            _cask.knn(FakeCuda(ref, device=2).__dlpack__(), ref, 1, "auto", True, 0, 0,
                      True, *out, None, None)
        import gc; gc.collect()
        # the 8 tensors of the out-of-range cases were taken and released; those refused
        # before (shape, dtype, layout, GPU) were never taken
        assert len(deleted) == 8, deleted
        idx, _ = cask.knn(FakeCuda(ref), ref)  # and the runtime still works
        np.testing.assert_array_equal(idx, np.arange(50))
        print("ok")
    ''')


def test_the_estimate_from_a_sample_chooses_as_from_the_points():
    # a caller that cannot read the points on the host (CuPy on a real GPU) hands the
    # rows auto's estimate reads: the same method is chosen, the same answers come
    _sim('''
        import cask
        from cask import _knn
        from cask._lib import _cask
        for n, m in [(5000, 1100), (40000, 3000), (9000, 30000)]:
            obs, ref = points(n, 3), points(m, 4)
            runs = []
            for sampled in (False, True):
                idx = np.empty((n, 1), np.int32)
                dist = np.empty((n, 1), np.float32)
                os_ = _knn._gpu_sample(obs, 256) if sampled else None
                rs_ = _knn._gpu_sample(ref, min(m, 2048)) if sampled else None
                pruned = _cask.knn(FakeCuda(obs).__dlpack__(), FakeCuda(ref).__dlpack__(),
                                   1, "auto", True, 0, 0, True, idx, dist, os_, rs_)
                runs.append((pruned, idx, dist))
            assert runs[0][0] == runs[1][0], (n, m)
            np.testing.assert_array_equal(runs[0][1], runs[1][1])
            np.testing.assert_array_equal(runs[0][2], runs[1][2])
        print("ok")
    ''')


def test_host_points_are_used_in_place_and_checked_in_c():
    rng = np.random.default_rng(0)
    obs = np.c_[rng.uniform(-90, 90, 300), rng.uniform(-180, 180, 300)]
    assert _knn._points(obs, "obs") is obs                       # no copy
    f = np.asfortranarray(obs)
    assert _knn._points(f, "obs").flags.c_contiguous
    swapped = obs.astype(">f8")
    np.testing.assert_array_equal(_knn._points(swapped, "obs"), obs)
    i1, d1 = cask.knn(obs, obs[:40])
    i2, d2 = cask.knn(swapped, obs[:40].astype(np.float32).astype(">f4"))
    np.testing.assert_array_equal(i2, cask.knn(obs, obs[:40].astype(np.float32))[0])
    ro = obs.copy()
    ro.flags.writeable = False                                  # read-only is fine
    np.testing.assert_array_equal(cask.knn(ro, obs[:40])[0], i1)


@pytest.mark.parametrize("where", [0, 1, 2, 131071, 131072, 300002])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_one_bad_value_anywhere_is_found(where, dtype):
    # the check is one pass cut in blocks over workers: every position counts
    rng = np.random.default_rng(1)
    n = 300003                              # blocks of 2^17 rows, 8 points, a tail
    obs = np.c_[rng.uniform(-90, 90, n), rng.uniform(-180, 180, n)].astype(dtype)
    for col, v in [(0, 90.5), (1, -180.01), (where % 2, np.nan)]:
        bad = obs.copy()
        bad[where, col] = v
        with pytest.raises(ValueError, match="obs has values outside latitude"):
            cask.knn(bad, obs[:10])


def test_radian_limits_accept_rounded_float_pi():
    edge = np.array([[np.pi / 2, np.pi], [-np.pi / 2, -np.pi]], np.float32)  # rounded up
    cask.knn(edge, edge, degrees=False)
    with pytest.raises(ValueError, match=r"latitude \[-1.5708, 1.5708\], longitude "
                                         r"\[-3.14159, 3.14159\]"):
        cask.knn(edge.astype(np.float64) * 1.0001, edge, degrees=False)


# ---- real GPUs ----

def test_cupy_points_are_read_in_place():
    cupy = _cupy()
    rng = np.random.default_rng(2)
    obs = np.c_[rng.uniform(-90, 90, 20000), rng.uniform(-180, 180, 20000)].astype(np.float32)
    ref = np.c_[rng.uniform(-90, 90, 3000), rng.uniform(-180, 180, 3000)].astype(np.float32)
    want = cask.knn(obs, ref)
    go, gr = cupy.asarray(obs), cupy.asarray(ref)
    cask.knn(go, gr)
    cask.transfer_stats(reset=True)
    got = cask.knn(go, gr, method="brute")
    s = cask.transfer_stats()
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    # the points stay where they are (the prepared references may move between GPUs)
    assert s["bytes_h2d"] == 0, s
    with pytest.raises(ValueError, match="obs has values outside"):
        bad = go.copy()
        bad[7, 1] = cupy.nan
        cask.knn(bad, gr)
    with pytest.raises(ValueError, match="ref has values outside"):
        cask.knn(go, gr * 2)


def test_torch_cuda_points_are_read_in_place():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA GPU")
    if _cask.info()["ngpus"] == 0 or _cask.info()["simulated_gpus"]:
        pytest.skip("cask's runtime has no real GPU (run with CASK_NGPU unset)")
    rng = np.random.default_rng(3)
    obs = np.c_[rng.uniform(-90, 90, 5000), rng.uniform(-180, 180, 5000)]
    ref = np.c_[rng.uniform(-90, 90, 800), rng.uniform(-180, 180, 800)]
    want = cask.knn(obs, ref, k=2)
    got = cask.knn(torch.from_numpy(obs).cuda(), torch.from_numpy(ref).cuda(), k=2)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    with pytest.raises(ValueError, match="obs has values outside"):
        cask.knn(torch.from_numpy(obs).cuda() * 3, torch.from_numpy(ref).cuda())
