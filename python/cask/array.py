"""cask.array: lazy chunked arrays on cask's runtime, shaped like ``dask.array``.

Building an array records an expression; ``.compute()`` (or ``cask.compute(a, b)``)
runs it as one task graph on cask's workers (elementwise chains fused into one task
per chunk) and returns NumPy arrays. The GIL is released while cask computes; Ctrl-C
raises KeyboardInterrupt at once (the run ends in the background, and the next call
waits for it).

Supported: dtypes float32, float64, int32, int64, uint32; up to 4 axes; regular chunks
(one size per axis, the last may be shorter); slices that fall on chunk boundaries.
"""
from __future__ import annotations

import numbers
import os

import numpy as np

from . import _gpu
from ._lib import _cask

__all__ = ["Array", "from_array", "from_dlpack", "asarray", "from_npy", "to_npy", "ones",
           "zeros", "full", "arange", "random", "compute", "persist", "map_blocks", "Kernel",
           "matmul", "rechunk", "sum", "mean", "std", "var", "min", "max", "argmin",
           "argmax"]

from ._chunks import _check_dtype, _expand_chunks, _normalize_chunks  # noqa: E402


class Array:
    """A lazy chunked array (``dask.array.Array``'s counterpart). Build with the
    functions of ``cask.array``, combine with operators and NumPy ufuncs, run with
    ``.compute()``."""

    __slots__ = ("_node", "_dtype", "_shape", "_chunksize", "__weakref__")
    __array_priority__ = 20

    def __init__(self, node):
        self._node = node
        dt, shape, chunks, _, _ = node.meta()
        self._dtype = np.dtype(dt)
        self._shape = tuple(shape)
        self._chunksize = tuple(chunks)

    # ---- properties ----
    @property
    def dtype(self):
        return self._dtype

    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def nbytes(self):
        return self.size * self._dtype.itemsize

    @property
    def chunksize(self):
        return self._chunksize

    @property
    def chunks(self):
        return _expand_chunks(self._chunksize, self._shape)

    @property
    def numblocks(self):
        return tuple(len(c) for c in self.chunks)

    @property
    def npartitions(self):
        return int(np.prod(self.numblocks, dtype=np.int64))

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __repr__(self):
        return (f"cask.array<shape={self._shape}, dtype={self._dtype}, "
                f"chunksize={self._chunksize}, chunktype=numpy.ndarray>")

    # ---- running ----
    def compute(self, **kwargs):
        """Runs the graph and returns a NumPy array (a NumPy scalar for 0-d)."""
        return compute(self, **kwargs)[0]

    def persist(self):
        """Computes the chunks and keeps them in the runtime; later expressions read
        them instead of recomputing. Returns self."""
        _cask.persist([self._node])
        return self

    def to_npy(self, path):
        """Computes into a .npy file (chunks written in parallel)."""
        _cask.to_npy(self._node, os.fspath(path))

    def plan(self):
        """The graph compute would run (tasks, fused tasks...), without running it."""
        return _cask.plan([self._node])

    def __array__(self, dtype=None, copy=None):
        x = np.asarray(self.compute())
        return x.astype(dtype, copy=False) if dtype is not None else x

    def __dlpack__(self, stream=None, **kwargs):
        """DLPack export (computes; host memory): np.from_dlpack(x), torch.from_dlpack(x)."""
        out = np.ascontiguousarray(self.compute())
        return out.__dlpack__(**kwargs) if kwargs else out.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)        # kDLCPU: results come back to host memory

    def __bool__(self):
        return bool(self.compute())

    def __float__(self):
        return float(self.compute())

    def __int__(self):
        return int(self.compute())

    # ---- elementwise ----
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or kwargs.get("out") is not None:
            return NotImplemented
        kwargs.pop("out", None)
        if kwargs:
            return NotImplemented
        if ufunc is np.matmul:
            return matmul(inputs[0], inputs[1])
        name = _UFUNCS.get(ufunc)
        if name is None:
            return NotImplemented
        if ufunc.nin == 1:
            return _unary(name, inputs[0])
        return _binary(name, inputs[0], inputs[1])

    def __neg__(self):
        return _unary("neg", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _unary("abs", self)

    def __add__(self, o):
        return _binary("add", self, o)

    def __radd__(self, o):
        return _binary("add", o, self)

    def __sub__(self, o):
        return _binary("sub", self, o)

    def __rsub__(self, o):
        return _binary("sub", o, self)

    def __mul__(self, o):
        return _binary("mul", self, o)

    def __rmul__(self, o):
        return _binary("mul", o, self)

    def __truediv__(self, o):
        return _binary("truediv", self, o)

    def __rtruediv__(self, o):
        return _binary("truediv", o, self)

    def __pow__(self, o):
        return _binary("pow", self, o)

    def __rpow__(self, o):
        return _binary("pow", o, self)

    def __matmul__(self, o):
        return matmul(self, o)

    def __rmatmul__(self, o):
        return matmul(o, self)

    def astype(self, dtype):
        dt = _check_dtype(dtype)
        if dt == self._dtype:
            return self
        return Array(_cask.astype(self._node, dt.name))

    # ---- reductions ----
    def sum(self, axis=None, keepdims=False):
        return _reduce("sum", self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return _reduce("mean", self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return _reduce("min", self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return _reduce("max", self, axis, keepdims)

    def var(self, axis=None, ddof=0, keepdims=False):
        return _reduce("var", self, axis, keepdims, ddof)

    def std(self, axis=None, ddof=0, keepdims=False):
        return _reduce("std", self, axis, keepdims, ddof)

    def argmin(self, axis=None):
        return _reduce("argmin", self, axis, False)

    def argmax(self, axis=None):
        return _reduce("argmax", self, axis, False)

    # ---- structure ----
    def rechunk(self, chunks):
        return rechunk(self, chunks)

    def __getitem__(self, index):
        return _getitem(self, index)

    def map_blocks(self, kernel, *others, dtype=None, args=b""):
        return map_blocks(kernel, self, *others, dtype=dtype, args=args)


# ufuncs cask computes (others give NotImplemented: NumPy then raises TypeError)
_UFUNCS = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "truediv",
           np.minimum: "min", np.maximum: "max", np.power: "pow", np.negative: "neg",
           np.absolute: "abs", np.sqrt: "sqrt", np.exp: "exp", np.log: "log", np.sin: "sin",
           np.cos: "cos", np.square: "square", np.positive: "pos"}
_FLOAT_FUNCS = {"sqrt", "exp", "log", "sin", "cos"}


def _unary(name, x):
    x = asarray(x)
    if name == "pos":
        return x
    if name in _FLOAT_FUNCS and x.dtype.kind != "f":
        x = x.astype(np.float64)   # as NumPy: float functions of integers give float64
    return Array(_cask.unary(name, x._node))


def _binary(name, a, b):
    if isinstance(a, Array) and isinstance(b, Array):
        dt = np.result_type(a.dtype, b.dtype)
        if name == "truediv" and dt.kind != "f":
            dt = np.dtype(np.float64)
        dt = _check_dtype(dt)
        op = "div" if name == "truediv" else name
        return Array(_cask.binary(op, a.astype(dt)._node, b.astype(dt)._node))
    if isinstance(b, Array):   # scalar op array
        return _binary_scalar(name, b, a, True)
    if isinstance(a, Array):
        return _binary_scalar(name, a, b, False)
    return NotImplemented


def _binary_scalar(name, x, s, first):
    if isinstance(s, np.ndarray) and s.ndim > 0:
        return _binary(name, x, from_array(s)) if not first else _binary(name, from_array(s), x)
    if not isinstance(s, (numbers.Number, np.generic)) or isinstance(s, complex):
        return NotImplemented
    dt = x.dtype
    # NumPy 2 (NEP 50): a Python scalar takes the array's dtype, unless a float meets an
    # integer array, or the operation is a true division of integers
    if x.dtype.kind in "iu" and (isinstance(s, (float, np.floating)) or name == "truediv"):
        dt = np.dtype(np.float64)
    elif isinstance(s, np.generic):
        dt = _check_dtype(np.result_type(x.dtype, s.dtype))
    op = "div" if name == "truediv" else name
    return Array(_cask.binary_scalar(op, x.astype(dt)._node, float(s), first))


def _axes(axis, ndim):
    if axis is None:
        return None
    axes = (axis,) if isinstance(axis, numbers.Integral) else tuple(axis)
    out = []
    for a in axes:
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"cask: axis {a} is out of bounds for {ndim} axes")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("cask: repeated axis")
    return sorted(out)


def _reduce(op, x, axis, keepdims, ddof=0):
    x = asarray(x)
    axes = _axes(axis, x.ndim)
    if axes is not None and len(axes) == x.ndim:
        axes = None
    if axes is None or len(axes) == 1:
        node = _cask.reduce(op, x._node, None if axes is None else axes[0], int(ddof))
        r = Array(node)
    elif op in ("sum", "min", "max"):
        r = x
        for a in reversed(axes):           # last axis first, as a full reduction does
            r = Array(_cask.reduce(op, r._node, a, 0))
    elif op == "mean":
        n = int(np.prod([x.shape[a] for a in axes]))
        r = _reduce("sum", x.astype(np.float64) if x.dtype.kind != "f" else x, axes, False)
        r = r / n if r.dtype.kind == "f" else r.astype(np.float64) / n
    else:
        raise NotImplementedError(f"cask: {op} over several (not all) axes")
    if keepdims:
        for a in (range(x.ndim) if axes is None else axes):
            r = Array(_cask.expand_dims(r._node, a))
    return r


def _getitem(x, index):
    if not isinstance(index, tuple):
        index = (index,)
    if any(i is Ellipsis for i in index):
        k = index.index(Ellipsis)
        index = index[:k] + (slice(None),) * (x.ndim - len(index) + 1) + index[k + 1:]
    if len(index) > x.ndim:
        raise IndexError(f"cask: too many indices for {x.ndim} axes")
    index = index + (slice(None),) * (x.ndim - len(index))
    start, stop, drop = [], [], []
    for ax, (i, n) in enumerate(zip(index, x.shape)):
        if isinstance(i, numbers.Integral):
            i = int(i) + (n if i < 0 else 0)
            if not 0 <= i < n:
                raise IndexError(f"cask: index {i} is out of bounds for axis {ax} of {n}")
            start.append(i)
            stop.append(i + 1)
            drop.append(ax)
        elif isinstance(i, slice):
            b, e, s = i.indices(n)
            if s != 1:
                raise NotImplementedError("cask: slices with a step are not supported")
            if e <= b:
                raise ValueError("cask: empty slices are not supported")
            start.append(b)
            stop.append(e)
        else:
            raise NotImplementedError(f"cask: index {i!r} (only integers and slices)")
    if start == [0] * x.ndim and stop == list(x.shape):
        r = x
    else:
        c = x.chunksize
        for ax in range(x.ndim):
            if start[ax] % c[ax] or (stop[ax] % c[ax] and stop[ax] != x.shape[ax]):
                raise NotImplementedError(
                    f"cask: slice [{start[ax]}:{stop[ax]}] of axis {ax} does not fall on its "
                    f"chunk boundaries (chunks of {c[ax]}): rechunk first, to a size that "
                    "divides both ends")
        r = Array(_cask.slice(x._node, start, stop))
    for ax in reversed(drop):   # an integer index removes its axis (max of one element)
        r = Array(_cask.reduce("max", r._node, ax, 0))
    return r


# ---- creating arrays ----

def from_array(x, chunks="auto"):
    """A cask array over a NumPy array, any buffer-protocol object, or a DLPack tensor.
    Host memory: zero-copy when the data are C-contiguous, native-endian and of a
    supported dtype (they must then stay unchanged while the array lives); other
    layouts are copied once. GPU memory (CuPy, ``torch.cuda``, anything whose
    ``__dlpack_device__`` is CUDA): zero-copy through DLPack (``from_dlpack``), the
    chunks being views of the tensor's memory where they are contiguous (chunked
    along the first axis), when cask's runtime has GPUs; else copied to the host.
    ``chunks`` as Dask's (int, tuple, tuple of tuples (regular), dict, -1, "auto")."""
    if isinstance(x, Array):
        return x if chunks in ("auto", None) else x.rechunk(chunks)
    if _gpu._cuda_device_of(x) is not None:
        if _cask.info()["ngpus"] > 0:
            return from_dlpack(x, chunks)
        x = _gpu._to_host(x)
    elif not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__"):
        try:
            x = np.from_dlpack(x)
        except (TypeError, RuntimeError, BufferError):
            x = np.asarray(x)
    a = np.asarray(x)
    if a.dtype.kind == "O" or a.dtype.fields is not None:
        raise TypeError(f"cask: cannot make an array of dtype {a.dtype}")
    _check_dtype(a.dtype.newbyteorder("="))
    if a.ndim > _cask.MAX_DIMS:
        raise ValueError(f"cask: {a.ndim} axes, at most {_cask.MAX_DIMS}")
    if a.size == 0:
        raise ValueError("cask: empty arrays are not supported")
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    a = np.ascontiguousarray(a)
    if a.ndim == 0:
        return full((), a[()], dtype=a.dtype)
    return Array(_cask.from_buffer(a, _normalize_chunks(chunks, a.shape)))


def from_dlpack(x, chunks="auto"):
    """A cask array over a DLPack tensor without a copy. A CUDA tensor (CuPy,
    ``torch.cuda``...) is wrapped in place: cask's GPU tasks read its memory, which
    must stay unchanged while the array lives (the array keeps the tensor alive). A
    non-contiguous CuPy or PyTorch tensor is first made contiguous on its GPU (one
    device copy); the producer's current stream is synchronized once, here. Host
    tensors go to ``from_array``. Raises ValueError when cask's runtime has no GPU."""
    dev = _gpu._cuda_device_of(x)
    if dev is None:
        return from_array(np.from_dlpack(x), chunks)
    if _cask.info()["ngpus"] == 0:
        raise ValueError("cask: a GPU tensor, but cask's runtime has no GPU "
                         "(CASK_NGPU=0 or none found): use from_array to copy it")
    x = _gpu._contiguous_and_synced(x)
    shape = tuple(int(s) for s in x.shape)
    if len(shape) == 0:
        return full((), _gpu._to_host(x)[()], dtype=np.dtype(str(x.dtype).replace("torch.", "")))
    c = _normalize_chunks(chunks, shape)
    return Array(_cask.from_dlpack_device(x.__dlpack__(), c))


def asarray(x, chunks="auto"):
    """x if it is a cask array, else from_array(x, chunks)."""
    return x if isinstance(x, Array) else from_array(x, chunks)


def from_npy(path, chunks=None):
    """An array read lazily from a .npy file (little-endian, C order), chunk by chunk
    when computed. chunks as Dask's (None: cask chooses)."""
    path = os.fspath(path)
    a = Array(_cask.from_npy(path, None))
    c = _normalize_chunks(chunks, a.shape)
    return a if c is None or c == a.chunksize else Array(_cask.from_npy(path, c))


def to_npy(x, path):
    """Computes x into a .npy file."""
    asarray(x).to_npy(path)


def _shape(shape):
    if isinstance(shape, numbers.Integral):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def full(shape, fill_value, dtype=None, chunks="auto"):
    """An array of fill_value (dtype: fill_value's, as NumPy)."""
    shape = _shape(shape)
    dt = _check_dtype(np.array(fill_value).dtype if dtype is None else dtype)
    return Array(_cask.full(dt.name, shape, _normalize_chunks(chunks, shape),
                            float(fill_value)))


def ones(shape, dtype=float, chunks="auto"):
    return full(shape, 1, dtype=dtype, chunks=chunks)


def zeros(shape, dtype=float, chunks="auto"):
    return full(shape, 0, dtype=dtype, chunks=chunks)


def arange(start, stop=None, step=1, dtype=None, chunks="auto"):
    """1-D: start, start + step, ... below stop (as numpy.arange)."""
    if stop is None:
        start, stop = 0, start
    n = int(np.ceil((stop - start) / step))
    dt = _check_dtype(np.arange(start, start + step, step).dtype if dtype is None else dtype)
    c = _normalize_chunks(chunks, (n,))
    return Array(_cask.arange(dt.name, n, float(start), float(step), c[0] if c else n))


class _Random:
    """cask.array.random: counter-based random numbers (Philox4x32-10), the same for
    any chunking, worker count and device. Without seed, one is drawn from NumPy's
    global generator."""

    @staticmethod
    def _seed(seed):
        return int(np.random.randint(0, 2**63, dtype=np.int64)) if seed is None else int(seed)

    def uniform(self, low=0.0, high=1.0, size=None, chunks="auto", seed=None, dtype=float):
        shape = _shape(size if size is not None else ())
        return Array(_cask.random("uniform", _check_dtype(dtype).name, shape,
                                  _normalize_chunks(chunks, shape), self._seed(seed),
                                  float(low), float(high)))

    def random(self, size=None, chunks="auto", seed=None, dtype=float):
        return self.uniform(0.0, 1.0, size, chunks, seed, dtype)

    def normal(self, loc=0.0, scale=1.0, size=None, chunks="auto", seed=None, dtype=float):
        shape = _shape(size if size is not None else ())
        return Array(_cask.random("normal", _check_dtype(dtype).name, shape,
                                  _normalize_chunks(chunks, shape), self._seed(seed),
                                  float(loc), float(scale)))


random = _Random()


# ---- functions ----

def matmul(a, b):
    """The matrix product of two 2-D arrays (by tiles; OpenBLAS on CPUs)."""
    a, b = asarray(a), asarray(b)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError("cask: matmul of 2-D arrays only")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"cask: matmul of {a.shape} and {b.shape}")
    dt = _check_dtype(np.result_type(a.dtype, b.dtype))
    return Array(_cask.matmul(a.astype(dt)._node, b.astype(dt)._node))


def rechunk(x, chunks):
    x = asarray(x)
    c = _normalize_chunks(chunks, x.shape)
    if c is None or c == x.chunksize:
        return x
    return Array(_cask.rechunk(x._node, c))


def sum(x, axis=None, keepdims=False):
    return _reduce("sum", x, axis, keepdims)


def mean(x, axis=None, keepdims=False):
    return _reduce("mean", x, axis, keepdims)


def min(x, axis=None, keepdims=False):
    return _reduce("min", x, axis, keepdims)


def max(x, axis=None, keepdims=False):
    return _reduce("max", x, axis, keepdims)


def var(x, axis=None, ddof=0, keepdims=False):
    return _reduce("var", x, axis, keepdims, ddof)


def std(x, axis=None, ddof=0, keepdims=False):
    return _reduce("std", x, axis, keepdims, ddof)


def argmin(x, axis=None):
    return _reduce("argmin", x, axis, False)


def argmax(x, axis=None):
    return _reduce("argmax", x, axis, False)


def compute(*arrays, device="cpu", **kwargs):
    """Computes cask arrays in one graph; returns a tuple of NumPy arrays (a NumPy
    scalar for 0-d ones). Objects that are not cask arrays are returned as they are.

    device="gpu" (or "cuda", "gpu:N", "cuda:N") leaves the results in GPU memory: CuPy
    arrays if CuPy imports, else PyTorch CUDA tensors (both have ``__dlpack__``),
    written by cask's GPU tasks device to device, with every task that has a GPU
    version run on a GPU, so that a chain over GPU inputs (``from_dlpack``) moves no
    byte through the host (``cask.transfer_stats()`` shows it). The GPU is N, else
    that of the first GPU input, else 0. Without GPU workers in cask's runtime the
    results are computed on the host and copied to the GPU."""
    if device not in ("cpu", None):
        return _gpu._compute_gpu(arrays, device, compute)
    todo = [(i, a) for i, a in enumerate(arrays) if isinstance(a, Array)]
    outs = [np.empty(a.shape, a.dtype) for _, a in todo]
    if todo:
        _cask.compute([a._node for _, a in todo], outs)
    res = list(arrays)
    for (i, _), o in zip(todo, outs):
        res[i] = o[()] if o.ndim == 0 else o
    return tuple(res)


def persist(*arrays):
    """Computes the arrays and keeps their chunks in the runtime; returns them."""
    _cask.persist([asarray(a)._node for a in arrays])
    return arrays[0] if len(arrays) == 1 else arrays


class Kernel:
    """A C kernel of yours for map_blocks: ``Kernel(path, cpu="symbol")`` loads the
    shared library at path and registers its function(s) (``cask_kernel_fn``: see
    cask/task.h and cask_array_task_block in cask/array.h) with the runtime."""

    def __init__(self, path, cpu=None, cuda=None, name=None, elementwise=False):
        self.path = os.fspath(path)
        self.name = name or cpu or cuda
        self._handle = _cask.load_kernel(self.path, self.name, cpu, cuda, bool(elementwise))

    def __repr__(self):
        return f"cask.array.Kernel({self.name!r} from {self.path!r})"


def map_blocks(kernel, *arrays, dtype=None, args=b""):
    """Runs a registered C kernel once per output chunk (cask_array_map_blocks): inputs
    broadcast together, buffers 0..n-1 the input blocks, buffer n the output block of
    dtype (default: the first input's). args: bytes handed to every call."""
    if not isinstance(kernel, Kernel):
        raise TypeError("cask: map_blocks takes a cask.array.Kernel (a C kernel)")
    arrays = [asarray(a) for a in arrays]
    dt = _check_dtype(dtype if dtype is not None else arrays[0].dtype)
    return Array(_cask.map_blocks(kernel._handle, [a._node for a in arrays], dt.name,
                                  bytes(args)))
