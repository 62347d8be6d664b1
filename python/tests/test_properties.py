"""Hypothesis property tests of cask.array against NumPy, within the error bounds that
docs/arrays.md states ("Numerics: what is promised"): + - * / sqrt square correctly
rounded (so NumPy's bits exactly); exp, log, sin, cos, pow within 1 ULP of the exact
value (checked against a reference in higher precision, rounded: at most 1 ULP apart);
sums within the float64 pairwise bound of the exact sum; min/max exact; results the
same for any chunking."""
import math

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="no Hypothesis: property tests skipped")
from hypothesis import given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import cask.array as ca  # noqa: E402

SETTINGS = settings(max_examples=40, deadline=None)
FLOATS = [np.float32, np.float64]


def arrays(dtype, lo, hi, max_side=40):
    return hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=2, min_side=1,
                                              max_side=max_side),
                      elements=st.floats(float(dtype(lo)), float(dtype(hi)),
                                         width=np.dtype(dtype).itemsize * 8,
                                         allow_nan=False, allow_infinity=False))


def chunked(a, data):
    chunks = tuple(data.draw(st.integers(1, n)) for n in a.shape)
    return ca.from_array(a, chunks=chunks)


def ulps(got, want):
    """ULP distance between two float arrays of one dtype (inf == inf, NaN == NaN)."""
    it = np.int32 if got.dtype == np.float32 else np.int64
    g, w = got.view(it).astype(np.int64), want.view(it).astype(np.int64)
    g = np.where(g < 0, np.iinfo(it).min - g, g)
    w = np.where(w < 0, np.iinfo(it).min - w, w)
    d = np.abs(g - w)
    return np.where(np.isnan(got) & np.isnan(want), 0, d)


def reference(f, a):
    """f at a in higher precision, rounded once to a's dtype."""
    wide = np.float64 if a.dtype == np.float32 else np.longdouble
    with np.errstate(all="ignore"):
        return f(a.astype(wide)).astype(a.dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "min", "max"])
@SETTINGS
@given(data=st.data())
def test_binary_operations_are_numpys_bits(dtype, op, data):
    a = data.draw(arrays(dtype, -1e6, 1e6))
    b = data.draw(arrays(dtype, -1e6, 1e6).filter(lambda v: True), label="b")
    b = np.resize(b, a.shape)
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
         "min": np.minimum, "max": np.maximum}[op]
    with np.errstate(all="ignore"):
        want = f(a, b)
    got = f(chunked(a, data), chunked(b, data)).compute()
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_sqrt_square_and_scalars_are_numpys_bits(dtype, data):
    a = data.draw(arrays(dtype, 0, 1e10))
    x = chunked(a, data)
    s = dtype(data.draw(st.floats(-100, 100, width=np.dtype(dtype).itemsize * 8), label="s"))
    for got, want in [(np.sqrt(x), np.sqrt(a)), (np.square(x), np.square(a)),
                      (x * s + 1, a * s + dtype(1)), (-x, -a), (abs(x - 5), abs(a - dtype(5)))]:
        np.testing.assert_array_equal(got.compute(), want)


BOUNDS = {  # (function, domain): at most 1 ULP from the correctly rounded value
    "exp": (np.exp, {np.float32: (-100, 100), np.float64: (-700, 700)}),
    "log": (np.log, {np.float32: (1e-30, 1e30), np.float64: (1e-300, 1e300)}),
    "sin": (np.sin, {np.float32: (-1e4, 1e4), np.float64: (-1e6, 1e6)}),
    "cos": (np.cos, {np.float32: (-1e4, 1e4), np.float64: (-1e6, 1e6)}),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(BOUNDS))
@SETTINGS
@given(data=st.data())
def test_library_functions_within_one_ulp(dtype, name, data):
    f, domains = BOUNDS[name]
    a = data.draw(arrays(dtype, *domains[dtype]))
    got = f(chunked(a, data)).compute()
    assert ulps(got, reference(f, a)).max() <= 1


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_pow_within_one_ulp(dtype, data):
    a = data.draw(arrays(dtype, 0.125, 8))
    e = data.draw(st.floats(-8, 8, width=np.dtype(dtype).itemsize * 8))
    got = (chunked(a, data) ** e).compute()
    want = reference(lambda v: np.power(v, v.dtype.type(e)), a)
    assert ulps(got, want).max() <= 1


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_sum_and_mean_within_the_pairwise_bound(dtype, data):
    a = data.draw(arrays(dtype, -1e3, 1e3, max_side=200))
    x = chunked(a, data)
    n = a.size
    exact = math.fsum(a.astype(np.float64).ravel())
    bound = (math.log2(n) + 2) * 2.0 ** -52 * float(np.abs(a).astype(np.float64).sum())
    half_ulp = float(np.spacing(dtype(abs(exact)))) if dtype == np.float32 else 0.0
    assert abs(float(x.sum().compute()) - exact) <= bound + half_ulp
    assert abs(float(x.mean().compute()) - exact / n) <= (bound + half_ulp) / n + \
        float(np.spacing(dtype(abs(exact / n))))
    # the same bits for any chunking
    y = chunked(a, data)
    assert x.sum().compute() == y.sum().compute()


@pytest.mark.parametrize("dtype", FLOATS + [np.int32, np.int64])
@SETTINGS
@given(data=st.data())
def test_min_max_and_axis_sums_exact_or_close(dtype, data):
    if np.dtype(dtype).kind == "f":
        a = data.draw(arrays(dtype, -1e6, 1e6))
    else:
        a = data.draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=2, max_side=30),
                                 elements=st.integers(-10**6, 10**6)))
    x = chunked(a, data)
    for axis in [None] + list(range(a.ndim)):
        np.testing.assert_array_equal(x.min(axis=axis).compute(), a.min(axis=axis))
        np.testing.assert_array_equal(x.max(axis=axis).compute(), a.max(axis=axis))
        np.testing.assert_array_equal(x.argmax(axis=axis).compute(), a.argmax(axis=axis))
        want = a.astype(np.float64).sum(axis=axis)
        got = x.sum(axis=axis).compute()
        if np.dtype(dtype).kind == "i":
            np.testing.assert_array_equal(got, a.sum(axis=axis, dtype=np.int64))
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-3 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("dtype", FLOATS)
@SETTINGS
@given(data=st.data())
def test_var_and_std_close_to_numpy_in_float64(dtype, data):
    a = data.draw(arrays(dtype, -1e3, 1e3))
    x = chunked(a, data)
    w = a.astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-10
    for axis in [None] + list(range(a.ndim)):
        np.testing.assert_allclose(x.var(axis=axis).compute(), w.var(axis=axis),
                                   rtol=tol, atol=tol * (1 + float(np.abs(w).max()) ** 2))
        np.testing.assert_allclose(x.std(axis=axis).compute(), w.std(axis=axis),
                                   rtol=tol, atol=tol * (1 + float(np.abs(w).max())))
