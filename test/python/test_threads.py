"""The threading runtime choice (``RLX_THREADING``) and the OpenMP runtime's set-up."""

import ctypes

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.lowering.schedules import threads_passes
from rlx_mlir.runtime import threads


def test_openmp_is_the_default_and_async_is_selectable(monkeypatch):
    monkeypatch.delenv("RLX_THREADING", raising=False)
    assert threads.openmp_library() is not None  # pinned in pyproject.toml
    assert threads.threading_runtime() == "openmp"
    assert "convert-scf-to-openmp{num-threads=2}" in threads_passes(2)
    monkeypatch.setenv("RLX_THREADING", "async")
    assert "async-parallel-for" in threads_passes(2)
    assert threads_passes(1) == ""


def test_a_bad_runtime_name_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("RLX_THREADING", "tbb")
    with pytest.raises(RlxError, match="RLX_THREADING='tbb': expected one of openmp, async"):
        threads.threading_runtime()


def test_openmp_workers_spin_for_the_short_block_time(monkeypatch):
    monkeypatch.delenv("KMP_BLOCKTIME", raising=False)
    path = threads.openmp_runtime()
    library = ctypes.CDLL(path)
    library.kmp_get_blocktime.restype = ctypes.c_int
    assert library.kmp_get_blocktime() == threads.OPENMP_BLOCKTIME_MS


@pytest.mark.parametrize("runtime", ["openmp", "async"])
def test_both_runtimes_run_a_threaded_step_in_one_process(monkeypatch, runtime, rng):
    """A 2-thread matmul + GELU (a forall each) on either runtime, the two in one process."""
    monkeypatch.setenv("RLX_NUM_THREADS", "2")
    monkeypatch.setenv("RLX_THREADING", runtime)
    b = rlx.Builder("step")
    x, w = b.input("x", (512, 256)), b.input("w", (256, 512))
    b.ret(b.gelu(x @ w) * 2.0)
    exe = rlx.compile(b.module)
    xs = rng.standard_normal((512, 256)).astype(np.float32)
    ws = (rng.standard_normal((256, 512)) / 16).astype(np.float32)
    want = rlx.interpret(b.module, xs, ws)[0]
    for _ in range(3):
        np.testing.assert_allclose(exe(xs, ws)[0], want, rtol=1e-4, atol=1e-4)
