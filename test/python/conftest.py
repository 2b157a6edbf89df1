"""Shared pytest helpers."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture(autouse=True, scope="session")
def private_cache_dir(tmp_path_factory):
    """Keep the suite's JIT disk cache out of ~/.cache (one fresh folder per run)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RLX_CACHE_DIR", str(tmp_path_factory.mktemp("rlx_cache")))
    yield
    mp.undo()
