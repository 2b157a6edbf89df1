"""Grouped and depthwise conv2d, forward and gradients, side by side with PyTorch eager in
one process (not a test; not part of ``make bench``).

    python bench/conv_ops.py [--groups 1 32 64] [--stride 1] [--threads 2]

Input ``[32, 64, 56, 56]``, 3x3 taps, padding 1, f32. For each ``groups``: the conv
alone, ``d/dx`` and ``d/dw`` of ``sum(conv ** 2)`` (each gradient includes the forward),
median milliseconds of repeated calls, and the gradients checked against torch's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from common import median_call_s  # noqa: E402

N, C, HW = 32, 64, 56


def median_ms(fn: Callable[[], object], repeats: int = 9) -> float:
    return median_call_s(fn, repeats, warmup=1) * 1e3


def measure(groups: int, stride: int) -> dict[str, tuple[float, float]]:
    """``{what: (rlx ms, torch ms)}`` for one grouped conv."""
    import torch
    import torch.nn.functional as F

    import rlx_mlir as rlx

    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, HW, HW), dtype=np.float32)
    w = rng.standard_normal((C, C // groups, 3, 3), dtype=np.float32) * 0.1
    kw = dict(padding=1, stride=stride, groups=groups)
    loss = lambda x, w: (rlx.nn.conv2d(x, w, **kw) ** 2).sum()  # noqa: E731
    conv = rlx.jit(lambda x, w: rlx.nn.conv2d(x, w, **kw))
    dx, dw = rlx.jit(rlx.grad(loss, argnums=0)), rlx.jit(rlx.grad(loss, argnums=1))
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)

    def torch_grad(wrt):
        return lambda: torch.autograd.grad((F.conv2d(tx, tw, **kw) ** 2).sum(), wrt)[0]

    def torch_conv():
        with torch.no_grad():
            return F.conv2d(tx, tw, **kw)

    for mine, theirs in ((dx, torch_grad(tx)), (dw, torch_grad(tw))):
        want = theirs().numpy()
        np.testing.assert_allclose(mine(x, w), want, rtol=2e-3, atol=2e-3 * np.abs(want).max())
    return {"conv": (median_ms(lambda: conv(x, w)), median_ms(torch_conv)),
            "d/dx": (median_ms(lambda: dx(x, w)), median_ms(torch_grad(tx))),
            "d/dw": (median_ms(lambda: dw(x, w)), median_ms(torch_grad(tw)))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[1, 32, 64])
    parser.add_argument("--stride", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    os.environ["RLX_NUM_THREADS"] = str(args.threads)
    import torch

    torch.set_num_threads(args.threads)
    print(f"[{N}, {C}, {HW}, {HW}] 3x3 stride {args.stride}, {args.threads} threads (ms)")
    for groups in args.groups:
        row = measure(groups, args.stride)
        cells = "  ".join(f"{k} {r:6.2f} vs torch {t:6.2f}" for k, (r, t) in row.items())
        print(f"groups {groups:3d}: {cells}", flush=True)


if __name__ == "__main__":
    main()
