"""The rlx-mlir peer: Builder -> (grad_with_loss) -> rlx_mlir.compile -> native calls.

The driver points ``RLX_CACHE_DIR`` at a fresh temporary directory, so every compile
measured here is cold unless the compile workload deliberately reuses that directory.
"""

from __future__ import annotations

import os
import pathlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from common import median_call_s, param_shapes

import rlx_mlir as rlx
from rlx_mlir import models
from rlx_mlir.runtime import jit, threads

ENTRIES = {"mlp": "mlp_loss", "transformer": "block_loss", "llama": "llama_loss"}


def build_gemm(m: int, k: int, n: int):
    """``@gemm(a [M, K], b [K, N]) -> a @ b`` as an rlx module."""
    b = rlx.Builder("gemm")
    b.ret(b.input("a", (m, k)) @ b.input("b", (k, n)))
    return b.module


def build_model(workload: str, dims: dict[str, Any]):
    """The rlx_mlir.models module of a model workload."""
    if workload == "mlp":
        return models.mlp_loss(batch=dims["batch"], sizes=dims["sizes"])
    if workload == "transformer":
        return models.transformer_block_loss(**dims)
    return models.llama_block_loss(**dims)


def compile_step(workload: str, dims: dict[str, Any]) -> tuple[Any, list[str], dict, Any]:
    """(executable of ``@<f>_grad``, its wrt names, phase timings in seconds, module)."""
    times: dict[str, float] = {}
    started = time.perf_counter()
    module = build_model(workload, dims)
    times["build_s"] = time.perf_counter() - started
    started = time.perf_counter()
    grad = rlx.grad_with_loss(module, ENTRIES[workload])
    times["grad_with_loss_s"] = time.perf_counter() - started
    started = time.perf_counter()
    exe = rlx.compile(module, entry=grad.sym_name.data)
    times["compile_s"] = time.perf_counter() - started
    times.update(exe.engine.timings)
    wrt = [a.data for a in grad.attributes["rlx.wrt"].data]
    return exe, wrt, times, module


def prepare(workload: str, case: Any, inputs: dict[str, np.ndarray]) -> Callable[[], list]:
    """A zero-argument callable running one GEMM or one training step (compiled first)."""
    if workload == "gemm":
        exe = rlx.compile(build_gemm(*case), entry="gemm")
        a, b = inputs["a"], inputs["b"]
        return lambda: list(exe(a, b))
    exe, wrt, _, _ = compile_step(workload, case)
    return step_callable(exe, wrt, workload, case, inputs)


def step_callable(exe, wrt, workload, dims, inputs) -> Callable[[], list]:
    """Calls with ``d_output = 1``; returns ``[loss, *grads]`` in ``param_shapes`` order."""
    names = list(param_shapes(workload, dims))
    if sorted(wrt) != sorted(names):
        raise RuntimeError(f"rlx wrt {wrt} differs from the benchmark's parameters {names}")
    seed_shape = exe.signature.args[-1].shape
    args = dict(inputs, d_output=np.ones(seed_shape, np.float32))
    order = [1 + wrt.index(n) for n in names]

    def run() -> list:
        out = exe(**args)
        return [out[0], *(out[i] for i in order)]

    return run


def to_numpy(outputs: list) -> list[np.ndarray]:
    return outputs


def library_info() -> dict[str, Any]:
    return {"rlx_mlir": rlx.__version__, "RLX_CACHE_DIR": os.environ.get("RLX_CACHE_DIR"),
            "RLX_NUM_THREADS": os.environ.get("RLX_NUM_THREADS"),
            "runtime_reads_RLX_NUM_THREADS": runtime_reads_num_threads(),
            "compiler_fingerprint": jit.compiler_fingerprint()[:12],
            "threading": threads.threading_runtime()}


def runtime_reads_num_threads() -> bool:
    """Whether any rlx_mlir source mentions RLX_NUM_THREADS (else the knob is ignored)."""
    package = pathlib.Path(rlx.__file__).parent
    return any("RLX_NUM_THREADS" in p.read_text(errors="ignore") for p in package.rglob("*.py"))


# ---------------------------------------------------------------- compile-time workload


def warm_up() -> float:
    """Compile and call a tiny MLP gradient: the process's one-time costs (imports, MLIR
    and LLVM start-up, the threading runtime) fall here, not in the first model's compile
    (the JAX peer warms XLA up the same way). Returns its seconds."""
    started = time.perf_counter()
    module = models.mlp_loss(batch=4, sizes=(8, 8, 2))
    grad = rlx.grad_with_loss(module, ENTRIES["mlp"])
    exe = rlx.compile(module, entry=grad.sym_name.data)
    exe(*(np.zeros(a.shape, a.dtype) for a in exe.signature.args))
    return time.perf_counter() - started


def compile_phases(workload: str, dims: dict[str, Any], inputs: dict[str, np.ndarray]) -> dict:
    """IR -> native: build, grad_with_loss, compile, first call minus a steady call (the
    peers' compile times are measured that way); then an in-memory re-compile."""
    started = time.perf_counter()
    exe, wrt, phases, module = compile_step(workload, dims)
    run = step_callable(exe, wrt, workload, dims, inputs)
    call_started = time.perf_counter()
    run()
    first_done = time.perf_counter()
    phases["first_call_s"] = first_done - call_started
    phases["steady_call_s"] = median_call_s(run, calls=3)
    phases["first_call_extra_s"] = max(0.0, phases["first_call_s"] - phases["steady_call_s"])
    phases["total_s"] = first_done - started - phases["steady_call_s"]
    phases["disk_cache_hit"] = bool(phases.pop("disk_cache_hit", 0.0))
    text = rlx.to_text(module)
    started = time.perf_counter()
    again = rlx.compile(text, entry=exe.name)
    phases["memory_hit_s"] = time.perf_counter() - started
    phases["memory_hit_same_engine"] = again.engine is exe.engine
    return {k: round(v, 6) if isinstance(v, float) else v for k, v in phases.items()}
