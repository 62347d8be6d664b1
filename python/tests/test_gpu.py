# test_gpu.py: GPU tensors in and out through DLPack (cask.array.from_dlpack,
# compute(device="gpu"), cask.transfer_stats).
#
# Two kinds of tests:
# - on simulated GPUs (always run): a simulated GPU's memory is host memory, so a fake
#   DLPack producer (ctypes) hands cask a "CUDA" tensor over a NumPy buffer; the whole
#   zero-copy path (capsule, views, device-to-device writes, counters) runs in a child
#   process started with CASK_SIM_GPUS=1.
# - on real GPUs with CuPy / PyTorch: SKIP, saying why, without CuPy, PyTorch, a GPU, or
#   GPU workers in cask's runtime (the suite python sets CASK_NGPU=0: run this file with
#   CASK_NGPU unset, as bench/python_device.sh does).
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

FAKE = r'''
import ctypes, sys
import numpy as np

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]

class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

class DLManaged(ctypes.Structure):
    pass

DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManaged))
DLManaged._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                      ("deleter", DELETER)]
_new = ctypes.pythonapi.PyCapsule_New
_new.restype = ctypes.py_object
_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_NAME = b"dltensor"
deleted = []
_alive = {}

@DELETER
def _deleter(p):
    deleted.append(ctypes.addressof(p.contents))

class FakeCuda:
    """A 'CUDA' tensor over host memory (what a simulated GPU's memory is)."""
    def __init__(self, a, device=0, strides=None, code=None):
        self.a, self.device, self.strides, self.code = a, device, strides, code
        self.shape, self.dtype = a.shape, a.dtype
    def __dlpack_device__(self):
        return (2, self.device)
    def __dlpack__(self, stream=None):
        a = self.a
        m = DLManaged()
        shape = (ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
        strides = (ctypes.c_int64 * max(a.ndim, 1))(*(self.strides or [s // a.itemsize for s in a.strides]))
        code = {"f": 2, "i": 0, "u": 1}[a.dtype.kind] if self.code is None else self.code
        m.dl_tensor = DLTensor(a.ctypes.data, DLDevice(2, self.device), a.ndim,
                               DLDataType(code, a.itemsize * 8, 1), shape, strides, 0)
        m.deleter = _deleter
        _alive[ctypes.addressof(m)] = (m, shape, strides, a)
        return _new(ctypes.addressof(m), _NAME, None)
'''


def _run_sim(body, ngpu=1):
    """Runs FAKE + body in a child with ngpu simulated GPUs; fails with its output."""
    env = dict(os.environ)
    env.update({"CASK_SIM_GPUS": str(ngpu), "CASK_NCPU": "2", "CUDA_VISIBLE_DEVICES": "",
                "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    env.pop("CASK_NGPU", None)
    # os._exit: the fake tensors' deleters are Python callbacks (ctypes), which must not
    # run while the interpreter is being torn down (a real producer's are C)
    code = FAKE + textwrap.dedent(body) + "\nimport os\nsys.stdout.flush()\nos._exit(0)\n"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_a_dlpack_cuda_tensor_is_wrapped_and_the_chain_stays_off_the_host():
    out = _run_sim('''
        import cask, cask.array as ca
        assert cask.info()["ngpus"] == 1 and cask.info()["simulated_gpus"]
        cask._gpu._device_empty = lambda shape, dt, dev: (lambda o: (o, o.ctypes.data))(np.empty(shape, dt))
        x = np.arange(200 * 30, dtype=np.float32).reshape(200, 30)
        t = FakeCuda(x)
        a = ca.from_array(t, chunks=(50, 30))
        y = np.sqrt(a * 2 + 1) - 1
        cask.transfer_stats(reset=True)
        (r,) = cask.compute(y, device="gpu")
        s = cask.transfer_stats()
        np.testing.assert_array_equal(r, np.sqrt(x * 2 + 1) - 1)
        assert s["bytes_h2d"] == 0 and s["bytes_d2h"] == 0, s
        assert s["gpu_tasks"] > 0, s
        assert cask.array.Array.compute(y).sum() == r.sum()     # to the host too
        del a, y
        import gc; gc.collect()
        assert len(deleted) == 1, deleted      # the tensor's deleter ran, once
        print("ok")
    ''')
    assert "ok" in out


def test_inner_chunks_a_second_gpu_and_host_results():
    _run_sim('''
        import cask, cask.array as ca
        cask._gpu._device_empty = lambda shape, dt, dev: (lambda o: (o, o.ctypes.data))(np.empty(shape, dt))
        x = np.arange(60 * 40, dtype=np.float64).reshape(60, 40)
        a = ca.from_dlpack(FakeCuda(x, device=1), chunks=(16, 16))
        cask.transfer_stats(reset=True)
        (r,) = cask.compute(a + 1, device="gpu:1")
        np.testing.assert_array_equal(r, x + 1)
        s = cask.transfer_stats()
        assert s["bytes_h2d"] == 0 and s["bytes_d2h"] == 0, s
        assert float(a.sum()) == x.sum()
        i = ca.from_dlpack(FakeCuda(np.arange(10, dtype=np.int32)))
        np.testing.assert_array_equal((i * 3).compute(), np.arange(10) * 3)
    ''', ngpu=2)


def test_bad_gpu_tensors_are_clear_errors():
    _run_sim('''
        import pytest, cask, cask.array as ca
        from cask._lib import _cask
        x = np.zeros((4, 6), np.float32)
        with pytest.raises(TypeError, match="dtype"):
            ca.from_dlpack(FakeCuda(np.zeros(4, np.float16)))
        with pytest.raises(TypeError, match="dtype"):
            ca.from_dlpack(FakeCuda(x, code=5))
        with pytest.raises(ValueError, match="C-contiguous"):
            ca.from_dlpack(FakeCuda(x, strides=[1, 4]))
        with pytest.raises(ValueError, match="no GPU 3"):
            ca.from_dlpack(FakeCuda(x, device=3))
        cap = FakeCuda(x).__dlpack__()
        ca.Array(_cask.from_dlpack_device(cap, None))
        with pytest.raises(TypeError, match="unused DLPack capsule"):
            _cask.from_dlpack_device(cap, None)            # consumed once only
        with pytest.raises(TypeError):
            _cask.from_dlpack_device(object(), None)
        with pytest.raises(ValueError, match="device"):
            ca.ones(3).compute(device="tpu")
        with pytest.raises(ValueError, match="NULL"):
            _cask.compute_device(ca.ones(3)._node, None, 0, 24, 0, True)
        print("ok")
    ''')


def test_without_gpus_in_the_runtime_a_gpu_tensor_is_refused_by_from_dlpack():
    _run_sim('''
        import pytest, cask, cask.array as ca
        assert cask.info()["ngpus"] == 0
        with pytest.raises(ValueError, match="no GPU"):
            ca.from_dlpack(FakeCuda(np.zeros(3)))
    ''', ngpu=0)


# ---- real GPUs ----

def _cupy():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no CUDA GPU")
    except Exception as e:  # noqa: BLE001 (no driver, no device)
        pytest.skip(f"no CUDA GPU ({e})")
    import cask
    if cask.info()["ngpus"] == 0 or cask.info()["simulated_gpus"]:
        pytest.skip("cask's runtime has no real GPU (the suite python sets CASK_NGPU=0; "
                    "run with CASK_NGPU unset)")
    return cupy


def test_cupy_chain_in_and_out_without_host_bytes():
    cupy = _cupy()
    import cask
    import cask.array as ca
    x = cupy.random.default_rng(0).standard_normal((4096, 512), dtype=cupy.float32)
    a = ca.from_array(x, chunks=(512, 512))
    y = np.exp(np.sin(a) * 2 + 1) - a
    cask.transfer_stats(reset=True)
    r = y.compute(device="gpu")
    s = cask.transfer_stats()
    assert isinstance(r, cupy.ndarray) and r.shape == x.shape and r.dtype == x.dtype
    assert s["bytes_h2d"] == 0 and s["bytes_d2h"] == 0, s
    ref = cupy.exp(cupy.sin(x) * 2 + 1) - x
    cupy.testing.assert_allclose(r, ref, rtol=2e-6, atol=1e-5)


def test_cupy_inner_chunks_and_reductions():
    cupy = _cupy()
    import cask.array as ca
    x = cupy.arange(300 * 200, dtype=cupy.float64).reshape(300, 200)
    a = ca.from_dlpack(x, chunks=(64, 64))
    r = (a * 2).compute(device="gpu")
    cupy.testing.assert_array_equal(r, x * 2)
    assert float(a.sum()) == float(x.sum())
    xt = x.T                                           # not C-contiguous: a device copy
    cupy.testing.assert_array_equal(ca.from_array(xt).compute(device="gpu"), xt)


def test_torch_cuda_tensor_in_and_out():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA GPU")
    import cask
    import cask.array as ca
    if cask.info()["ngpus"] == 0 or cask.info()["simulated_gpus"]:
        pytest.skip("cask's runtime has no real GPU (run with CASK_NGPU unset)")
    t = torch.arange(10000, dtype=torch.float32, device="cuda").reshape(100, 100)
    r = (ca.from_dlpack(t) + 1).compute(device="gpu")
    got = torch.from_dlpack(r) if not isinstance(r, torch.Tensor) else r
    assert torch.equal(got.cpu(), (t + 1).cpu())


def test_knn_accepts_cupy_inputs():
    cupy = _cupy()
    import cask
    rng = np.random.default_rng(1)
    obs = np.c_[rng.uniform(-90, 90, 5000), rng.uniform(-180, 180, 5000)].astype(np.float32)
    ref = np.c_[rng.uniform(-90, 90, 700), rng.uniform(-180, 180, 700)].astype(np.float32)
    i1, d1 = cask.knn(obs, ref, k=2)
    i2, d2 = cask.knn(cupy.asarray(obs), cupy.asarray(ref), k=2)
    np.testing.assert_array_equal(i1, i2)
    np.testing.assert_array_equal(d1, d2)
