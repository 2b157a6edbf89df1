"""Workload definitions shared by every peer: shapes, seeded inputs, FLOP counts, timing.

Everything here is plain numpy so that every peer's subprocess can import it without
pulling in another peer's library.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

WORKLOADS = ("gemm", "mlp", "transformer", "llama", "compile")
PEERS = ("rlx", "numpy", "torch", "torch_compile", "jax")
MODELS = ("mlp", "transformer", "llama")
RESULT_MARKER = "BENCH_RESULT "

GEMM_CASES = {"512^3": (512, 512, 512), "1024^3": (1024, 1024, 1024),
              "256x784x512": (256, 784, 512)}
QUICK_GEMM_CASES = {"64^3": (64, 64, 64), "32x48x16": (32, 48, 16)}

MODEL_DIMS = {
    "mlp": {"batch": 256, "sizes": (784, 512, 512, 10)},
    "transformer": {"batch": 8, "seq": 256, "d_model": 256, "heads": 4},
    "llama": {"batch": 4, "seq": 128, "d_model": 256, "heads": 8, "kv_heads": 2, "hidden": 512},
}
QUICK_MODEL_DIMS = {
    "mlp": {"batch": 8, "sizes": (16, 32, 32, 10)},
    "transformer": {"batch": 2, "seq": 8, "d_model": 16, "heads": 2},
    "llama": {"batch": 2, "seq": 8, "d_model": 16, "heads": 4, "kv_heads": 2, "hidden": 32},
}


def model_dims(workload: str, quick: bool) -> dict[str, Any]:
    """The size parameters of a model workload (the rlx_mlir.models keyword arguments)."""
    return dict((QUICK_MODEL_DIMS if quick else MODEL_DIMS)[workload])


def gemm_cases(quick: bool) -> dict[str, tuple[int, int, int]]:
    """``{label: (M, K, N)}`` of the GEMM workload."""
    return QUICK_GEMM_CASES if quick else GEMM_CASES


# ---------------------------------------------------------------- parameters and inputs


def param_shapes(workload: str, dims: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """Trainable parameters in the order rlx_mlir.models declares them."""
    if workload == "mlp":
        sizes = dims["sizes"]
        out: dict[str, tuple[int, ...]] = {}
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            out[f"w{i}"], out[f"b{i}"] = (fan_in, fan_out), (fan_out,)
        return out
    d = dims["d_model"]
    if workload == "transformer":
        return {"ln1_g": (d,), "ln1_b": (d,), "wq": (d, d), "wk": (d, d), "wv": (d, d),
                "wo": (d, d), "ln2_g": (d,), "ln2_b": (d,), "w1": (d, 4 * d), "b1": (4 * d,),
                "w2": (4 * d, d), "b2": (d,)}
    kv = dims["kv_heads"] * (d // dims["heads"])
    hidden = dims["hidden"]
    return {"norm1": (d,), "wq": (d, d), "wk": (d, kv), "wv": (d, kv), "wo": (d, d),
            "norm2": (d,), "w_gate": (d, hidden), "w_up": (d, hidden), "w_down": (hidden, d)}


def data_inputs(workload: str, dims: dict[str, Any], rng: np.random.Generator) -> dict:
    """The non-parameter arguments (x, labels, rope tables)."""
    if workload == "mlp":
        batch, sizes = dims["batch"], dims["sizes"]
        x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
        labels = rng.integers(0, sizes[-1], (batch,)).astype(np.int32)
        return {"x": x, "labels": labels}
    shape = (dims["batch"], dims["seq"], dims["d_model"])
    x = rng.standard_normal(shape).astype(np.float32)
    if workload == "transformer":
        return {"x": x}
    cos, sin = rope_tables(dims["seq"], dims["d_model"] // dims["heads"])
    return {"x": x, "cos": cos, "sin": sin}


def rope_tables(seq: int, head_dim: int, base: float = 10000.0) -> tuple[np.ndarray, np.ndarray]:
    """The standard RoPE tables ``[S, head_dim/2]``."""
    inv_freq = base ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    angles = np.arange(seq, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def init_param(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Scaled normal weights, 1 +- noise gains, small biases."""
    noise = rng.standard_normal(shape)
    if len(shape) == 2:
        value = noise / np.sqrt(shape[0])
    elif name.endswith("_g") or name.startswith("norm"):
        value = 1.0 + 0.1 * noise
    else:
        value = 0.1 * noise
    return value.astype(np.float32)


def model_inputs(workload: str, dims: dict[str, Any], seed: int = 0) -> dict[str, np.ndarray]:
    """Seeded data inputs then parameters, in declaration order (identical for every peer)."""
    rng = np.random.default_rng(seed)
    args = data_inputs(workload, dims, rng)
    for name, shape in param_shapes(workload, dims).items():
        args[name] = init_param(name, shape, rng)
    return args


def gemm_inputs(m: int, k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Seeded f32 operands ``A [M, K]`` and ``B [K, N]``."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    return a, rng.standard_normal((k, n)).astype(np.float32)


# ---------------------------------------------------------------- timing


@dataclass
class Timing:
    """One timed case: milliseconds, repetitions and the process CPU/wall ratio."""

    first_call_ms: float
    median_ms: float
    min_ms: float
    max_ms: float
    reps: int
    cpu_util: float

    def as_dict(self) -> dict[str, Any]:
        out = {k: round(v, 4) if isinstance(v, float) else v for k, v in vars(self).items()}
        out["compile_ms"] = round(max(self.first_call_ms - self.median_ms, 0.0), 4)
        return out


def median_call_s(run: Callable[[], Any], calls: int, warmup: int = 0) -> float:
    """Median seconds of ``calls`` calls of ``run`` after ``warmup`` untimed ones."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(fn: Callable[[], Any], budget_s: float, min_reps: int = 5,
            max_reps: int = 2000) -> tuple[Timing, Any]:
    """Median of repeated timed calls of ``fn`` after a first call (and a warm-up call).

    Calls are timed until they add up to ``budget_s`` and number ``min_reps``; a slow
    function stops at ``4 * budget_s`` (at least one timed call), so a 10 s GEMM costs
    two calls, not seven. ``cpu_util`` (process CPU time over wall time of the timed
    loop) shows how many cores the peer really used.
    """
    started = time.perf_counter()
    result = fn()
    first = time.perf_counter() - started
    if first < budget_s:
        fn()  # warm-up; a slow first call is its own warm-up
    cpu0, wall0 = time.process_time(), time.perf_counter()
    samples = _time_until(fn, budget_s, min_reps, max_reps)
    util = (time.process_time() - cpu0) / max(time.perf_counter() - wall0, 1e-9)
    ms = [s * 1e3 for s in samples]
    return Timing(first * 1e3, statistics.median(ms), min(ms), max(ms), len(ms), util), result


def _time_until(fn: Callable[[], Any], budget_s: float, min_reps: int,
                max_reps: int) -> list[float]:
    samples: list[float] = []
    total = 0.0
    while len(samples) < max_reps:
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
        total += samples[-1]
        if total >= budget_s and (len(samples) >= min_reps or total >= 4 * budget_s):
            break
    return samples


def fingerprint(outputs: list[np.ndarray]) -> dict[str, Any]:
    """Loss and per-gradient L2 norms: compared across peers to check model equivalence."""
    loss = float(np.asarray(outputs[0], np.float64).reshape(-1)[0])
    norms = [float(np.linalg.norm(np.asarray(g, np.float64))) for g in outputs[1:]]
    return {"loss": loss, "grad_norms": norms}


def emit_result(payload: dict[str, Any]) -> None:
    """Print the worker's result as the one marked JSON line the driver parses."""
    print(RESULT_MARKER + json.dumps(payload), flush=True)


def shapes_and_threads(doc: str, default_shapes: list[str]) -> argparse.Namespace:
    """``--shapes`` and ``--threads`` of a side-by-side script (``bench/moe.py``,
    ``bench/quant.py``), the thread count applied to rlx, JAX and torch before their first
    use.

    >>> args = shapes_and_threads(__doc__, ["16x4096x4096"])   # doctest: +SKIP
    """
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=default_shapes)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ["RLX_NUM_THREADS"] = str(args.threads)
    os.environ["XLA_FLAGS"] = (f"--xla_cpu_multi_thread_eigen={args.threads > 1} "
                               f"intra_op_parallelism_threads={args.threads}")
    import torch

    torch.set_num_threads(args.threads)
    return args
