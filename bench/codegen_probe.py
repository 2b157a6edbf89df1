"""Codegen probe (not a test): GFLOP/s of rlx matmuls vs numpy/torch, model step and compile
times, fast vs naive pipeline. ``python bench/codegen_probe.py [--quick]``.

Every figure is measured in this process, interleaved with its peers, on the same shapes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np


def timeit(fn, seconds: float = 1.0) -> float:
    fn()
    best, total, n = float("inf"), 0.0, 0
    while total < seconds or n < 3:
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best, total, n = min(best, dt), total + dt, n + 1
    return best


def matmul_row(m, k, n, threads):
    os.environ["RLX_NUM_THREADS"] = str(threads)
    import rlx_mlir as rlx
    from rlx_mlir.runtime.jit import compile as jit_compile

    b = rlx.Builder(f"mm_{m}_{k}_{n}_{threads}")
    b.ret(b.input("a", (m, k)) @ b.input("b", (k, n)))
    t = time.perf_counter()
    f = jit_compile(b.module)
    ctime = time.perf_counter() - t
    a = np.random.rand(m, k).astype(np.float32)
    w = np.random.rand(k, n).astype(np.float32)
    flops = 2 * m * n * k
    rlx_t = timeit(lambda: f(a, w))
    np_t = timeit(lambda: a @ w)
    import torch

    torch.set_num_threads(threads)
    ta, tw = torch.from_numpy(a), torch.from_numpy(w)
    th_t = timeit(lambda: ta @ tw)
    print(f"matmul {m}x{k}x{n} threads={threads}: rlx {flops / rlx_t / 1e9:6.1f} GF/s  "
          f"numpy {flops / np_t / 1e9:6.1f}  torch {flops / th_t / 1e9:6.1f}  "
          f"(rlx/numpy {np_t / rlx_t:.2f}, rlx/torch {th_t / rlx_t:.2f}; compile {ctime:.2f} s)",
          flush=True)


def model_row(which: str, pipeline: str):
    """Run in a subprocess so each pipeline compiles cold."""
    code = f"""
import os, time, numpy as np
os.environ['RLX_PIPELINE'] = {pipeline!r}
os.environ['RLX_CACHE_DIR'] = 'off'
import rlx_mlir as rlx
from rlx_mlir import models
if {which!r} == 'char_lm':
    m = models.char_lm_loss(16, 32, 40, d_model=64, heads=4, layers=2); loss = 'lm_loss'
else:
    m = models.mlp_loss(256); loss = 'mlp_loss'
g = rlx.grad_with_loss(m, loss)
t = time.perf_counter(); f = rlx.compile(m, entry=g.sym_name.data); c = time.perf_counter() - t
rng = np.random.default_rng(0)
args = [(rng.standard_normal(a.shape) * 0.1).astype(a.dtype) if a.dtype.kind == 'f'
        else rng.integers(0, 10, a.shape).astype(a.dtype) for a in f.signature.args]
f(*args)
best, total, n = 1e9, 0.0, 0
while total < 2.0 or n < 3:
    t = time.perf_counter(); f(*args); dt = time.perf_counter() - t
    best, total, n = min(best, dt), total + dt, n + 1
# warm: a fresh compile from the in-memory cache
t = time.perf_counter(); rlx.compile(m, entry=g.sym_name.data); warm = time.perf_counter() - t
print(f"{which} [{pipeline}]: step {{best*1e3:.1f}} ms  compile {{c:.2f}} s "
      f"(lowering {{f.engine.timings.get('lowering_s', 0):.2f}} s, LLVM {{f.engine.timings.get('llvm_codegen_s', 0):.2f}} s)  "
      f"warm in-memory {{warm*1e3:.2f}} ms  llvm text {{len(f.engine.llvm_text)}} chars", flush=True)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=1800)
    print(r.stdout.strip() or r.stderr.strip()[-2000:], flush=True)


def torch_mlp_step():
    import torch

    torch.set_num_threads(len(os.sched_getaffinity(0)))
    x = torch.randn(256, 784)
    y = torch.randint(0, 10, (256,))
    ws = [torch.randn(i, o, requires_grad=True) for i, o in ((784, 512), (512, 512), (512, 10))]
    bs = [torch.zeros(o, requires_grad=True) for o in (512, 512, 10)]

    def step():
        h = x
        for i, (w, b) in enumerate(zip(ws, bs, strict=True)):
            h = h @ w + b
            if i < 2:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, y)
        torch.autograd.grad(loss, ws + bs)

    print(f"torch eager MLP step: {timeit(step, 2.0) * 1e3:.1f} ms", flush=True)


def main():
    quick = "--quick" in sys.argv
    print(f"load average {os.getloadavg()}", flush=True)
    shapes = [(512, 512, 512), (256, 784, 512)] + ([] if quick else [(1024, 1024, 1024)])
    for threads in (1, 2):
        for s in shapes:
            matmul_row(*s, threads)
    os.environ.pop("RLX_NUM_THREADS", None)
    torch_mlp_step()
    for which in ("mlp", "char_lm"):
        model_row(which, "fast")
    if not quick:
        for which in ("mlp", "char_lm"):
            model_row(which, "naive")
    print(f"load average {os.getloadavg()}", flush=True)


if __name__ == "__main__":
    main()
