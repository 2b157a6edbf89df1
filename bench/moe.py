"""Mixture-of-experts matmul, forward and training step, side by side with PyTorch eager
and JAX jit in one process (not a test; not part of ``make bench``).

    python bench/moe.py [--shapes 2048x512x1024x8 ...] [--threads 2]

Each shape is ``MxKxNxE``: tokens ``x [M, K]``, experts ``w [E, K, N]``, random expert
ids. rlx: ``rlx.nn.grouped_matmul`` (jit); torch: the usual loop over the experts
(``argsort`` by expert, one ``x[rows] @ w[e]`` per expert, the rows put back); JAX jit:
``argsort``, ``jax.lax.ragged_dot`` with the group sizes, the rows put back. The step is
the value and both gradients of ``sum(y * c)``. Median milliseconds of repeated calls;
the gradients are checked against torch's first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import median_call_s, shapes_and_threads  # noqa: E402

DEFAULT_SHAPES = ["2048x512x1024x8", "2048x1024x512x8", "1024x256x256x8", "2048x512x1024x32"]


def median_ms(fn: Callable[[], object], repeats: int = 9) -> float:
    return median_call_s(fn, repeats, warmup=1) * 1e3


def problem(m: int, k: int, n: int, e: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((m, k), dtype=np.float32),
            rng.standard_normal((e, k, n), dtype=np.float32) * 0.05,
            rng.integers(0, e, m).astype(np.int32),
            rng.standard_normal((m, n), dtype=np.float32))


def rlx_calls(x, w, ids, cot) -> tuple[Callable, Callable]:
    import rlx_mlir as rlx

    forward = rlx.jit(rlx.nn.grouped_matmul)
    step = rlx.jit(rlx.value_and_grad(
        lambda x, w, ids: (rlx.nn.grouped_matmul(x, w, ids) * cot).sum(), argnums=(0, 1)))
    return (lambda: forward(x, w, ids)), (lambda: step(x, w, ids))


def torch_calls(x, w, ids, cot) -> tuple[Callable, Callable]:
    import torch

    experts = w.shape[0]
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    tids, tcot = torch.tensor(ids).long(), torch.tensor(cot)

    def grouped(x, w):
        order = torch.argsort(tids, stable=True)
        counts = torch.bincount(tids, minlength=experts).tolist()
        parts = [rows @ w[e] for e, rows in enumerate(torch.split(x[order], counts))]
        y = torch.empty(x.shape[0], w.shape[2], dtype=x.dtype)
        y[order] = torch.cat(parts)
        return y

    def forward():
        with torch.no_grad():
            return grouped(tx, tw)

    def step():
        loss = (grouped(tx, tw) * tcot).sum()
        return loss, torch.autograd.grad(loss, (tx, tw))

    return forward, step


def jax_calls(x, w, ids, cot) -> tuple[Callable, Callable]:
    import jax
    import jax.numpy as jnp

    experts = w.shape[0]

    def grouped(x, w, ids):
        order = jnp.argsort(ids, stable=True)
        sizes = jnp.bincount(ids, length=experts).astype(jnp.int32)
        ys = jax.lax.ragged_dot(x[order], w, sizes)
        return jnp.zeros_like(ys).at[order].set(ys)

    forward = jax.jit(grouped)
    step = jax.jit(jax.value_and_grad(lambda x, w, ids: (grouped(x, w, ids) * cot).sum(),
                                      argnums=(0, 1)))
    args = [jnp.asarray(a) for a in (x, w, ids)]
    return (lambda: forward(*args).block_until_ready()), \
        (lambda: jax.block_until_ready(step(*args)))


def check(steps: dict[str, Callable]) -> None:
    """Every peer's gradients against torch's."""
    _, (tdx, tdw) = steps["torch"]()
    for name, step in steps.items():
        _, (dx, dw) = step()
        for mine, want in ((dx, tdx), (dw, tdw)):
            want = want.numpy()
            np.testing.assert_allclose(np.asarray(mine), want, rtol=2e-3,
                                       atol=2e-3 * np.abs(want).max(), err_msg=name)


def main() -> None:
    args = shapes_and_threads(__doc__, DEFAULT_SHAPES)
    peers = {"rlx": rlx_calls, "torch": torch_calls, "jax": jax_calls}
    print(f"{args.threads} threads, median ms: forward / value and both gradients")
    for shape in args.shapes:
        x, w, ids, cot = problem(*(int(v) for v in shape.split("x")))
        calls = {name: make(x, w, ids, cot) for name, make in peers.items()}
        check({name: step for name, (_, step) in calls.items()})
        cells = "  ".join(f"{name} {median_ms(fwd):7.2f} / {median_ms(step):7.2f}"
                          for name, (fwd, step) in calls.items())
        print(f"{shape:>18}: {cells}", flush=True)


if __name__ == "__main__":
    main()
