"""Weight-only quantized matmul (``rlx.quant.dequant_matmul``) side by side with PyTorch
eager and JAX jit decoding the same bytes, in one process (not a test; not part of
``make bench``).

    python bench/quant.py [--shapes 16x4096x4096 256x1024x1024 ...] [--threads 2]

Each shape is ``MxKxN``: activations ``x [M, K]`` and weights ``[K, N]`` stored as
``f32`` (the plain matmul), ``int8`` (per-32-row block scales), ``int4`` (two signed
nibbles a byte, block scales) or ``fp8`` (E4M3 bytes, per-column scales). Every peer
decodes the weights on each call, then multiplies: torch with integer ops and
``view(torch.float8_e4m3fn)``, JAX with ``jnp`` bit ops and ``float8_e4m3fn`` under
``jax.jit``. Median milliseconds of repeated calls; the products are checked against
numpy first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import median_call_s, shapes_and_threads  # noqa: E402

DEFAULT_SHAPES = ["1x4096x4096", "16x4096x4096", "256x1024x1024"]
SCHEMES = ("f32", "int8", "int4", "fp8")
BLOCK = 32


def problem(m: int, k: int, n: int) -> dict[str, np.ndarray]:
    import ml_dtypes

    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((m, k), dtype=np.float32),
            "w": rng.standard_normal((k, n), dtype=np.float32),
            "int8": rng.integers(-128, 128, (k, n)).astype(np.int8),
            "int4": rng.integers(0, 256, (k, n // 2)).astype(np.uint8),
            "fp8": rng.standard_normal((k, n)).astype(ml_dtypes.float8_e4m3fn).view(np.uint8),
            "blocks": rng.uniform(0.01, 0.02, (k // BLOCK, n)).astype(np.float32),
            "columns": rng.uniform(0.5, 1.0, n).astype(np.float32)}


def reference(p: dict[str, np.ndarray], scheme: str) -> np.ndarray:
    """The weights each scheme stands for, decoded by numpy."""
    import ml_dtypes

    k, n = p["w"].shape
    if scheme == "f32":
        return p["w"]
    if scheme == "fp8":
        return p["fp8"].view(ml_dtypes.float8_e4m3fn).astype(np.float32) * p["columns"]
    if scheme == "int8":
        levels = p["int8"].astype(np.float32)
    else:
        pair = np.stack([p["int4"] & 15, p["int4"] >> 4], -1).reshape(k, n).astype(np.int32)
        levels = (pair - 16 * (pair >= 8)).astype(np.float32)
    return (levels.reshape(k // BLOCK, BLOCK, n) * p["blocks"][:, None]).reshape(k, n)


def rlx_calls(p: dict[str, np.ndarray]) -> dict[str, Callable]:
    import rlx_mlir as rlx

    q = rlx.quant
    fns = {
        "f32": (rlx.jit(lambda x, w: x @ w), p["w"]),
        "int8": (rlx.jit(lambda x, w: q.dequant_matmul(x, w, p["blocks"], block_size=BLOCK)),
                 p["int8"]),
        "int4": (rlx.jit(lambda x, w: q.dequant_matmul(x, w, p["blocks"], block_size=BLOCK,
                                                       scheme="int4")), p["int4"].view(np.int8)),
        "fp8": (rlx.jit(lambda x, w: q.dequant_matmul(x, w, p["columns"], scheme="fp8_e4m3")),
                p["fp8"].view(np.int8)),
    }
    return {s: (lambda f=f, w=w: f(p["x"], w)) for s, (f, w) in fns.items()}


def torch_calls(p: dict[str, np.ndarray]) -> dict[str, Callable]:
    import torch

    t = {name: torch.from_numpy(a) for name, a in p.items()}
    k, n = p["w"].shape

    def blocked(levels):
        return (levels.reshape(k // BLOCK, BLOCK, n) * t["blocks"][:, None]).reshape(k, n)

    def int4(packed):
        pair = torch.stack([packed & 15, packed >> 4], -1).reshape(k, n).to(torch.int32)
        return blocked((pair - 16 * (pair >= 8).to(torch.int32)).float())

    decode = {"f32": lambda: t["w"],
              "int8": lambda: blocked(t["int8"].float()),
              "int4": lambda: int4(t["int4"]),
              "fp8": lambda: t["fp8"].view(torch.float8_e4m3fn).float() * t["columns"]}
    return {s: (lambda d=d: t["x"] @ d()) for s, d in decode.items()}


def jax_calls(p: dict[str, np.ndarray]) -> dict[str, Callable]:
    import jax
    import jax.numpy as jnp

    k, n = p["w"].shape
    a = {name: jnp.asarray(v) for name, v in p.items()}

    def blocked(levels):
        return (levels.reshape(k // BLOCK, BLOCK, n) * a["blocks"][:, None]).reshape(k, n)

    def int4(packed):
        pair = jnp.stack([packed & 15, packed >> 4], -1).reshape(k, n).astype(jnp.int32)
        return blocked((pair - 16 * (pair >= 8)).astype(jnp.float32))

    decode = {"f32": lambda w: w,
              "int8": lambda w: blocked(w.astype(jnp.float32)),
              "int4": int4,
              "fp8": lambda w: jax.lax.bitcast_convert_type(w, jnp.float8_e4m3fn
                                                            ).astype(jnp.float32) * a["columns"]}
    weights = {"f32": a["w"], "int8": a["int8"], "int4": a["int4"], "fp8": a["fp8"]}
    calls = {}
    for s, d in decode.items():
        f = jax.jit(lambda x, w, d=d: x @ d(w))
        calls[s] = lambda f=f, s=s: f(a["x"], weights[s]).block_until_ready()
    return calls


def main() -> None:
    args = shapes_and_threads(__doc__, DEFAULT_SHAPES)
    peers = {"rlx": rlx_calls, "torch": torch_calls, "jax": jax_calls}
    print(f"{args.threads} threads, median ms per call: " + " / ".join(SCHEMES))
    for shape in args.shapes:
        p = problem(*(int(v) for v in shape.split("x")))
        calls = {name: make(p) for name, make in peers.items()}
        for scheme in SCHEMES:
            want = p["x"] @ reference(p, scheme)
            for name, peer in calls.items():
                np.testing.assert_allclose(np.asarray(peer[scheme]()), want, rtol=1e-3,
                                           atol=1e-3 * np.abs(want).max(), err_msg=name)
        cells = "  ".join(
            f"{name} " + " / ".join(f"{median_call_s(peer[s], 9, warmup=1) * 1e3:.2f}"
                                    for s in SCHEMES)
            for name, peer in calls.items())
        print(f"{shape:>14}: {cells}", flush=True)


if __name__ == "__main__":
    main()
