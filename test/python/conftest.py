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


@pytest.fixture(scope="module")
def jax_x64():
    """JAX in float64 for a module (``pytestmark = pytest.mark.usefixtures("jax_x64")``),
    restored afterwards."""
    import jax

    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", before)


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty disk cache and memory cache (engines compiled before stay alive)."""
    from rlx_mlir.runtime import jit

    monkeypatch.setenv("RLX_CACHE_DIR", str(tmp_path))
    jit.clear_memory_cache()
    yield tmp_path
    jit.clear_memory_cache()
