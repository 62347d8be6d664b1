"""cask._gpu: GPU tensors for cask.array: recognising DLPack CUDA tensors, making them
contiguous and synchronized before cask reads them, and computing into GPU memory that
CuPy (else PyTorch) allocates (docs/python.md, GPUs)."""
import numpy as np

from ._lib import _cask

_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13


def _cuda_device_of(x):
    """The CUDA device id of a DLPack GPU tensor (CuPy, torch.cuda...), else None."""
    f = getattr(type(x), "__dlpack_device__", None)
    if f is None or not hasattr(x, "__dlpack__"):
        return None
    try:
        kind, dev = f(x)
    except Exception:
        return None
    return int(dev) if int(kind) in (_KDL_CUDA, _KDL_CUDA_MANAGED) else None


def _library_of(x):
    return type(x).__module__.split(".")[0]


def _to_host(x):
    """A GPU tensor's values in host memory (one copy)."""
    if hasattr(x, "get"):                       # CuPy
        return x.get()
    if hasattr(x, "cpu"):                       # PyTorch
        return x.detach().cpu().numpy()
    return np.from_dlpack(x)


def _contiguous_and_synced(x):
    """x made C-contiguous on its GPU (a device copy only if it was not), and its
    producer's pending work finished, so that cask's streams see the values."""
    lib = _library_of(x)
    if lib == "cupy":
        import cupy
        if not x.flags.c_contiguous:
            x = cupy.ascontiguousarray(x)
        with x.device:
            cupy.cuda.get_current_stream().synchronize()
    elif lib == "torch":
        import torch
        if not x.is_contiguous():
            x = x.contiguous()
        torch.cuda.current_stream(x.device).synchronize()
    return x


def _gpu_index(device):
    if not isinstance(device, str):
        raise ValueError(f"cask: device {device!r} (cpu, gpu, gpu:N)")
    name, _, n = device.partition(":")
    if name not in ("gpu", "cuda") or (n and not n.isdigit()):
        raise ValueError(f"cask: device {device!r} (cpu, gpu, gpu:N)")
    return int(n) if n else None


def _device_empty(shape, dtype, dev):
    """Uninitialised GPU memory of dev: (owner object, pointer)."""
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        with cupy.cuda.Device(dev):
            out = cupy.empty(shape, dtype)
        return out, int(out.data.ptr)
    try:
        import torch
    except ImportError:
        raise RuntimeError("cask: device='gpu' needs CuPy or PyTorch to hold the results") \
            from None
    out = torch.empty(shape, dtype=getattr(torch, np.dtype(dtype).name),
                      device=f"cuda:{dev}")
    return out, int(out.data_ptr())


def _device_copy_of(r, dev):
    """A host array's values in new memory of GPU dev (CuPy, else PyTorch)."""
    out, _ = _device_empty(np.shape(r), np.asarray(r).dtype, dev)
    if _library_of(out) == "cupy":
        out.set(np.ascontiguousarray(r)) if out.ndim else out.fill(r)
    elif _library_of(out) == "torch":
        import torch
        out.copy_(torch.from_numpy(np.ascontiguousarray(r)))
    else:                       # the tests' stand-in: host memory
        out[...] = r
    return out


def _compute_gpu(arrays, device, compute):
    dev = _gpu_index(device)
    if dev is None:
        dev = 0
    res = list(arrays)
    if _cask.info()["ngpus"] == 0:          # no GPU workers: host results, copied over
        host = compute(*arrays)
        for i, r in enumerate(host):
            if hasattr(arrays[i], "_node"):
                res[i] = _device_copy_of(r, dev)
        return tuple(res)
    for i, a in enumerate(arrays):
        if hasattr(a, "_node"):
            out, ptr = _device_empty(a.shape, a.dtype, dev)
            _cask.compute_device(a._node, out, ptr, a.nbytes, dev, True)
            res[i] = out
    return tuple(res)
