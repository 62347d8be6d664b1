# conftest.py: shared fixtures of the Python tests (suite python; run_pytest.py).
import os

import pytest


@pytest.fixture(scope="session")
def cask_knn_program():
    """The cask-knn program of this build (Meson passes CASK_KNN), or skip."""
    p = os.environ.get("CASK_KNN")
    if not p or not os.path.exists(p):
        pytest.skip("CASK_KNN not set: cask-knn of this build unknown (run through Meson)")
    return p


@pytest.fixture(scope="session")
def test_kernels():
    p = os.environ.get("CASK_TEST_KERNELS")
    if not p or not os.path.exists(p):
        pytest.skip("CASK_TEST_KERNELS not set (run through Meson)")
    return p
