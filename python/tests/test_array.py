"""cask.array against NumPy: creation, elementwise, reductions, matmul, structure,
running, and user C kernels."""
import os

import numpy as np
import pytest

import cask
import cask.array as ca


def test_repr_shows_shape_dtype_and_chunks_as_dask():
    x = ca.ones((10, 20), chunks=(5, 8), dtype=np.float32)
    assert repr(x) == ("cask.array<shape=(10, 20), dtype=float32, chunksize=(5, 8), "
                       "chunktype=numpy.ndarray>")
    assert x.chunks == ((5, 5), (8, 8, 4))
    assert x.numblocks == (2, 3) and x.npartitions == 6 and x.nbytes == 800


@pytest.mark.parametrize("chunks,want", [(4, (4, 4)), ((4, -1), (4, 10)),
                                         (((4, 4, 2), (10,)), (4, 10)),
                                         ({0: 3}, (3, 10)), ("auto", None)])
def test_chunks_argument_as_dask(chunks, want):
    a = np.arange(100.0).reshape(10, 10)
    x = ca.from_array(a, chunks=chunks)
    if want:
        assert x.chunksize == want
    np.testing.assert_array_equal(x.compute(), a)


def test_irregular_chunks_are_a_value_error():
    with pytest.raises(ValueError, match="regular"):
        ca.from_array(np.zeros(10), chunks=((3, 7),))


def test_from_array_is_zero_copy_for_contiguous_input():
    a = np.arange(12.0)
    x = ca.from_array(a, chunks=4)
    a[0] = 100.0            # the array reads a's memory
    assert x.compute()[0] == 100.0


def test_from_array_copies_other_layouts_and_byte_orders():
    a = np.arange(24.0).reshape(4, 6)
    np.testing.assert_array_equal(ca.from_array(a.T, chunks=2).compute(), a.T)
    np.testing.assert_array_equal(ca.from_array(a[:, ::2]).compute(), a[:, ::2])
    b = a.astype(">f8")
    np.testing.assert_array_equal(ca.from_array(b).compute(), a)


def test_from_array_takes_read_only_and_buffer_protocol_objects():
    a = np.arange(10, dtype=np.int32)
    a.setflags(write=False)
    assert ca.from_array(a).sum().compute() == 45
    import array
    assert ca.from_array(array.array("d", [1.0, 2.0])).sum().compute() == 3.0
    assert ca.from_array(memoryview(np.ones(3, np.float32))).sum().compute() == 3.0


@pytest.mark.parametrize("bad", [np.zeros(3, np.int16), np.zeros(3, np.complex128),
                                 np.zeros(3, bool), np.array(["a"]), np.zeros(3, object)])
def test_unsupported_dtypes_are_type_errors(bad):
    with pytest.raises(TypeError):
        ca.from_array(bad)


def test_bad_shapes_are_value_errors():
    with pytest.raises(ValueError):
        ca.from_array(np.zeros((0, 3)))
    with pytest.raises(ValueError):
        ca.from_array(np.zeros((1, 1, 1, 1, 2)))
    with pytest.raises(ValueError):
        ca.ones((3, 4)) + ca.ones((5,))
    with pytest.raises(ValueError):
        ca.ones((3, 4)) @ ca.ones((3, 4))
    with pytest.raises(ValueError):
        ca.ones(4, chunks=0)


def test_low_level_outputs_must_be_writable_and_contiguous():
    x = ca.ones(4)
    ro = np.zeros(4)
    ro.setflags(write=False)
    with pytest.raises(ValueError):
        cask._cask.compute([x._node], [ro])
    with pytest.raises(ValueError):
        cask._cask.compute([x._node], [np.zeros(8)[::2]])
    with pytest.raises(ValueError):
        cask._cask.compute([x._node], [np.zeros(2)])
    with pytest.raises(TypeError):
        cask._cask.compute([object()], [np.zeros(4)])


def test_creation_functions():
    np.testing.assert_array_equal(ca.zeros((3, 4), chunks=2).compute(), np.zeros((3, 4)))
    np.testing.assert_array_equal(ca.full(5, 7, dtype=np.int32).compute(),
                                  np.full(5, 7, np.int32))
    np.testing.assert_array_equal(ca.arange(3, 20, 2, chunks=4).compute(), np.arange(3, 20, 2))
    assert ca.arange(10).dtype == np.arange(10).dtype
    u = ca.random.uniform(2, 3, size=(100, 10), chunks=7, seed=1).compute()
    assert u.min() >= 2 and u.max() < 3
    # the same for any chunking
    v = ca.random.uniform(2, 3, size=(100, 10), chunks=(33, 4), seed=1).compute()
    np.testing.assert_array_equal(u, v)
    z = ca.random.normal(5, 2, size=100000, seed=3, chunks=10000)
    assert abs(float(z.mean()) - 5) < 0.05 and abs(float(z.std()) - 2) < 0.05


def test_elementwise_operators_and_ufuncs_match_numpy():
    a = np.linspace(0.1, 3, 60).reshape(6, 10)
    b = np.linspace(-1, 1, 10)
    x, y = ca.from_array(a, chunks=(4, 3)), ca.from_array(b, chunks=3)
    cases = [(x + y, a + b), (x - 2, a - 2), (3 - x, 3 - a), (x * y, a * b), (x / 4, a / 4),
             (1 / x, 1 / a), (x ** 2, a ** 2), (-x, -a), (abs(y), abs(b)),
             (np.sin(x), np.sin(a)), (np.exp(x), np.exp(a)), (np.sqrt(x), np.sqrt(a)),
             (np.log(x), np.log(a)), (np.cos(x), np.cos(a)), (np.square(x), np.square(a)),
             (np.maximum(x, y), np.maximum(a, b)), (np.minimum(x, 1.5), np.minimum(a, 1.5))]
    for got, want in cases:
        assert isinstance(got, ca.Array)
        np.testing.assert_allclose(got.compute(), want, rtol=1e-15, atol=0)


def test_dtypes_promote_as_numpy():
    i = ca.arange(10, dtype=np.int32)
    f = ca.ones(10, dtype=np.float32)
    assert (i + f).dtype == np.result_type(np.int32, np.float32)
    assert (i / 2).dtype == np.float64
    assert (i + 1).dtype == np.int32
    assert (i + 1.5).dtype == np.float64
    assert np.sqrt(i).dtype == np.float64
    np.testing.assert_array_equal((i / 4).compute(), np.arange(10, dtype=np.int32) / 4)


def test_unsupported_ufuncs_raise_type_error():
    with pytest.raises(TypeError):
        np.tan(ca.ones(3))


@pytest.mark.parametrize("op", ["sum", "mean", "min", "max", "std", "var", "argmin",
                                "argmax"])
@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 1)])
def test_reductions_with_axis_match_numpy(op, axis):
    a = np.random.default_rng(1).standard_normal((30, 17))
    x = ca.from_array(a, chunks=(7, 5))
    if op.startswith("arg") and isinstance(axis, tuple):
        return
    got = getattr(x, op)(axis=axis).compute()
    want = getattr(a, op)(axis=axis)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_keepdims_and_ddof():
    a = np.arange(24.0).reshape(4, 6)
    x = ca.from_array(a, chunks=2)
    np.testing.assert_allclose(x.sum(axis=1, keepdims=True).compute(),
                               a.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(x.std(ddof=1).compute(), a.std(ddof=1))
    np.testing.assert_allclose(ca.var(x, axis=0, ddof=1).compute(), a.var(axis=0, ddof=1))


def test_matmul():
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((50, 40)), rng.standard_normal((40, 30))
    x, y = ca.from_array(a, chunks=16), ca.from_array(b, chunks=16)
    np.testing.assert_allclose((x @ y).compute(), a @ b, rtol=1e-12)
    np.testing.assert_allclose(ca.matmul(x, b).compute(), a @ b, rtol=1e-12)
    np.testing.assert_allclose((a @ y).compute(), a @ b, rtol=1e-12)


def test_rechunk_and_slicing():
    a = np.arange(120.0).reshape(12, 10)
    x = ca.from_array(a, chunks=(4, 5))
    r = x.rechunk((3, 10))
    assert r.chunksize == (3, 10)
    np.testing.assert_array_equal(r.compute(), a)
    np.testing.assert_array_equal(x[4:12, 5:].compute(), a[4:12, 5:])
    np.testing.assert_array_equal(x[..., :5].compute(), a[..., :5])
    np.testing.assert_array_equal(x.rechunk((1, 5))[3].compute(), a[3])
    with pytest.raises(NotImplementedError, match="chunk boundaries"):
        x[1:5]
    with pytest.raises(NotImplementedError):
        x[::2]
    with pytest.raises(IndexError):
        x[20]


def test_compute_many_in_one_graph_and_persist():
    x = ca.random.uniform(size=(1000,), chunks=100, seed=4)
    y = np.exp(x) * 2
    s, m, raw = cask.compute(y.sum(), y.mean(), 5)
    assert raw == 5
    np.testing.assert_allclose(m * 1000, s)
    y.persist()
    np.testing.assert_allclose(float(y.sum()), s)
    assert ca.persist(x) is x


def test_npy_round_trip(tmp_path):
    a = np.arange(60, dtype=np.float32).reshape(6, 10)
    p = tmp_path / "a.npy"
    ca.to_npy(ca.from_array(a, chunks=2) * 2, p)
    np.testing.assert_array_equal(np.load(p), a * 2)
    y = ca.from_npy(p, chunks=(2, 5))
    assert y.chunksize == (2, 5)
    np.testing.assert_array_equal(y.compute(), a * 2)
    with pytest.raises(OSError):
        ca.from_npy(tmp_path / "missing.npy")
    (tmp_path / "bad.npy").write_bytes(b"not a npy file at all")
    with pytest.raises(ValueError):
        ca.from_npy(tmp_path / "bad.npy")


def test_map_blocks_runs_a_c_kernel(test_kernels):
    a = np.arange(100.0).reshape(10, 10)
    k = ca.Kernel(test_kernels, cpu="scale_f64")
    y = ca.from_array(a, chunks=3).map_blocks(k, args=np.float64(2.5).tobytes())
    np.testing.assert_array_equal(y.compute(), a * 2.5)
    rows = ca.map_blocks(ca.Kernel(test_kernels, cpu="row_index"), ca.zeros((7, 4), chunks=3),
                         dtype=np.int64)
    np.testing.assert_array_equal(rows.compute(), np.repeat(np.arange(7), 4).reshape(7, 4))


def test_task_errors_raise_with_cask_message(test_kernels):
    y = ca.map_blocks(ca.Kernel(test_kernels, cpu="always_fails"), ca.ones(4))
    with pytest.raises(cask.CaskError, match="fails on purpose"):
        y.compute()
    assert ca.ones(3).sum().compute() == 3          # still usable
    with pytest.raises(ValueError, match="no symbol"):
        ca.Kernel(test_kernels, cpu="no_such_symbol")
    with pytest.raises(OSError):
        ca.Kernel("/nonexistent/lib.so", cpu="x")


def test_arrays_of_a_stopped_runtime_raise():
    x = ca.ones(3)
    cask.shutdown()
    with pytest.raises(RuntimeError, match="shut down"):
        x + 1
    assert ca.ones(3).sum().compute() == 3


def test_config_applies_at_next_start():
    cask.shutdown()
    cask.config.set(ncpu=1)
    try:
        assert cask.info()["ncpu_workers"] == 1
        with pytest.raises(RuntimeError):
            cask.config.set(ncpu=2)
    finally:
        cask.shutdown()
        cask.config.reset()
    with pytest.raises(ValueError):
        cask.config.set(nope=1)


def test_gpu_arrays_through_cupy_or_skip():
    cupy = pytest.importorskip("cupy", reason="no CuPy: GPU arrays not tested")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception:
        pytest.skip("CuPy without a GPU")
    a = cupy.arange(10.0)
    x = ca.from_array(a)
    (r,) = ca.compute(x * 2, device="gpu")
    assert isinstance(r, cupy.ndarray)
    cupy.testing.assert_array_equal(r, a * 2)


def test_dlpack_export_to_numpy():
    x = ca.arange(6.0, chunks=4) * 2
    np.testing.assert_array_equal(np.from_dlpack(x), np.arange(6.0) * 2)


def test_dlpack_host_tensors():
    torch = pytest.importorskip("torch", reason="no PyTorch: DLPack input not tested")
    t = torch.arange(6, dtype=torch.float32)
    assert float(ca.from_array(t).sum()) == 15.0


def test_env_configures_the_runtime():
    import subprocess, sys
    env = dict(os.environ, CASK_NCPU="1")
    out = subprocess.run([sys.executable, "-c", "import cask; print(cask.info()['ncpu_workers'])"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1"


def test_python_threads_may_share_arrays():
    import threading
    a = np.arange(200000.0)
    x = ca.from_array(a, chunks=10000)
    errors, results = [], []

    def work(i):
        try:
            for _ in range(5):
                y = ca.from_array(a * i, chunks=7000)     # built while others compute
                results.append(float((np.sin(x) + y).sum()) - float(np.sin(a).sum() + (a * i).sum()))
                del y
        except Exception as e:      # pragma: no cover
            errors.append(e)
    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    assert len(results) == 20 and max(abs(r) for r in results) < 1e-3
