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


def test_openmp_workers_spin_for_the_short_block_time():
    """10 ms unless the user's ``KMP_BLOCKTIME`` says otherwise."""
    import os

    want = int(os.environ.get("KMP_BLOCKTIME", threads.OPENMP_BLOCKTIME_MS))
    library = ctypes.CDLL(threads.openmp_runtime())
    library.kmp_get_blocktime.restype = ctypes.c_int
    assert library.kmp_get_blocktime() == want


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


def test_another_openmp_runtime_in_the_process_means_async_not_an_abort(tmp_path):
    """With a second Intel/LLVM OpenMP runtime started in the process (here a copy of
    libiomp5 named like LLVM's libomp), starting ours would abort (OMP Error #15): the
    default falls back to the async runtime, and an explicit openmp is a clear error."""
    import shutil
    import subprocess
    import sys

    other = tmp_path / "libomp.so.5"
    shutil.copy(threads.openmp_library(), other)
    script = f"""
import ctypes, os, numpy as np, rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.runtime import threads
ctypes.CDLL({str(other)!r}).omp_get_max_threads()  # started
assert threads.other_openmp_loaded()
b = rlx.Builder("g"); a_, w_ = b.input("a", (512, 512)), b.input("w", (512, 512))
b.ret(b.matmul(a_, w_))
if os.environ.get("RLX_THREADING") == "openmp":
    try:
        rlx.compile(b.module)(np.ones((512, 512), np.float32), np.ones((512, 512), np.float32))
    except RlxError as e:
        print("error:", e)
else:
    assert threads.threading_runtime() == "async"
    a = np.random.default_rng(0).random((512, 512), np.float32)
    np.testing.assert_allclose(rlx.compile(b.module)(a, a)[0], a @ a, rtol=1e-4)
    print("ok")
"""
    env = {**__import__("os").environ, "RLX_CACHE_DIR": "off", "RLX_NUM_THREADS": "2"}
    env.pop("RLX_THREADING", None)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**env, "RLX_THREADING": "openmp"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "another OpenMP runtime" in done.stdout and "RLX_THREADING=async" in done.stdout
