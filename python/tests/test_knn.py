"""cask.knn against the cask-knn program: the same indices and distances."""
import subprocess

import numpy as np
import pytest

import cask


def points(n, seed):
    rng = np.random.default_rng(seed)
    lat = np.degrees(np.arcsin(rng.uniform(-1, 1, n)))
    lon = rng.uniform(-180, 180, n)
    return np.stack([lat, lon], axis=1)


@pytest.mark.parametrize("k,method", [(1, "auto"), (1, "brute"), (4, "pruned"),
                                      (3, "brute"), (1, "pruned")])
def test_same_answers_as_cask_knn(tmp_path, cask_knn_program, k, method):
    obs, ref = points(5000, 1), points(1500, 2)
    np.save(tmp_path / "obs.npy", obs)
    np.save(tmp_path / "ref.npy", ref)
    out = tmp_path / "out.npy"
    subprocess.run([cask_knn_program, "--obs", str(tmp_path / "obs.npy"), "--ref",
                    str(tmp_path / "ref.npy"), "--k", str(k), "--method", method,
                    "-q", "--out", str(out)], check=True)   # the devices cask.knn has
    want = np.load(out)
    idx, dist = cask.knn(obs, ref, k=k, method=method)
    if k == 1:
        np.testing.assert_array_equal(idx, want[:, 0].astype(np.int32))
        np.testing.assert_array_equal(dist.astype(np.float64), want[:, 1])
    else:
        np.testing.assert_array_equal(idx, want[:, :, 0].astype(np.int32))
        np.testing.assert_array_equal(dist.astype(np.float64), want[:, :, 1])


def test_against_a_float64_brute_force():
    obs, ref = points(300, 3).astype(np.float32), points(200, 4)
    idx, dist = cask.knn(obs, ref, k=2, units="rad")
    o, r = np.radians(obs.astype(np.float64)), np.radians(ref)
    d = 2 * np.arcsin(np.sqrt(
        np.sin((o[:, None, 0] - r[None, :, 0]) / 2) ** 2 +
        np.cos(o[:, None, 0]) * np.cos(r[None, :, 0]) *
        np.sin((o[:, None, 1] - r[None, :, 1]) / 2) ** 2))
    best = np.argsort(d, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(idx, best)
    np.testing.assert_allclose(dist, np.take_along_axis(d, best, 1), rtol=1e-5)


def test_more_neighbours_than_references():
    idx, dist = cask.knn(points(10, 5), points(2, 6), k=4)
    assert (idx[:, 2:] == -1).all() and np.isnan(dist[:, 2:]).all()


@pytest.mark.parametrize("bad", [np.zeros((3, 3)), np.zeros((0, 2)), np.array([[95.0, 0]]),
                                 np.array([[np.nan, 0]]), np.zeros(4)])
def test_bad_points_are_value_errors(bad):
    with pytest.raises(ValueError):
        cask.knn(bad, points(5, 1))


def test_bad_arguments():
    with pytest.raises(TypeError):
        cask.knn(np.zeros((3, 2), np.complex64), points(5, 1))
    with pytest.raises(ValueError):
        cask.knn(points(3, 1), points(5, 1), k=0)
    with pytest.raises(ValueError):
        cask.knn(points(3, 1), points(5, 1), method="fast")
    with pytest.raises(ValueError):
        cask.knn(points(3, 1), points(5, 1), units="miles")
