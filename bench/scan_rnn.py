"""The gradient of an RNN written as a scan closing over its weight, side by side with
JAX jit in one process (not a test; not part of ``make bench``).

    python bench/scan_rnn.py [--steps 1000] [--hidden 256] [--threads 2]

``h <- tanh(h @ w + x_t)`` over ``steps`` inputs ``[8, hidden]`` from ``h = 0``; the loss
is ``sum(h)``, differentiated with respect to ``w``. Prints the median milliseconds of
repeated calls, the first call's seconds (compile included) and the peak resident memory
of this process after the rlx runs (before JAX is imported); the gradients are checked
against JAX's.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import median_call_s  # noqa: E402

BATCH = 8


def rnn_loss(lib, scan):
    """The same loss for ``(rlx.nn, rlx.scan)`` and ``(jax.numpy, jax.lax.scan)``."""
    def loss(w, xs):
        h0 = np.zeros((BATCH, w.shape[0]), np.float32)
        h, _ = scan(lambda h, x: (lib.tanh(h @ w + x), None), h0, xs)
        return h.sum()
    return loss


def measure_rlx(w: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, float, float]:
    import rlx_mlir as rlx

    grad = rlx.jit(rlx.grad(rnn_loss(rlx.nn, rlx.scan)))
    start = time.perf_counter()
    got = grad(w, xs)
    first = time.perf_counter() - start
    return got, first, median_call_s(lambda: grad(w, xs), 7, warmup=1) * 1e3


def measure_jax(w: np.ndarray, xs: np.ndarray) -> tuple[np.ndarray, float, float]:
    import jax

    grad = jax.jit(jax.grad(rnn_loss(jax.numpy, jax.lax.scan)))
    start = time.perf_counter()
    got = np.asarray(grad(w, xs))
    first = time.perf_counter() - start
    return got, first, median_call_s(lambda: grad(w, xs).block_until_ready(), 7,
                                     warmup=1) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ["RLX_NUM_THREADS"] = str(args.threads)
    os.environ["RLX_CACHE_DIR"] = "off"
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((args.hidden, args.hidden)) / np.sqrt(args.hidden)).astype(np.float32)
    xs = rng.standard_normal((args.steps, BATCH, args.hidden)).astype(np.float32)
    ours, ours_first, ours_ms = measure_rlx(w, xs)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    theirs, theirs_first, theirs_ms = measure_jax(w, xs)
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-3 * np.abs(theirs).max())
    print(f"RNN grad, {args.steps} steps, [{BATCH}, {args.hidden}] state, {args.threads} "
          f"threads: rlx {ours_ms:.1f} ms (first call {ours_first:.2f} s, peak RSS "
          f"{peak_mb:.0f} MB) vs JAX {theirs_ms:.1f} ms (first call {theirs_first:.2f} s)")


if __name__ == "__main__":
    main()
