"""The machine's f32 FMA peak, measured (not a test): a loop of independent vector FMA
chains compiled by upstream MLIR 22, run on one thread and on every core at once.

    python bench/peak.py            # {"lanes": 16, "per_core": 236.1, "all_cores": 470.9, ...}

Each chain ``x = fma(x, m, a)`` depends on its previous value only, so with more chains in
flight than the cores' FMA pipes times the FMA latency, the loop runs at the FMA issue
rate: ``chains * lanes * 2`` flop per iteration. The widest vector the CPU has (16 f32
lanes with AVX-512, else 8) is used; the best of a few runs is kept (a busy neighbour only
slows a run down). ``bench/run.py`` stores the figures in results.json and divides GEMM
GFLOP/s by them.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import threading
import time
from collections.abc import Callable

CHAINS = 24
"""Independent accumulators: 2 FMA pipes x 4-cycle latency needs 8; 24 leaves margin and
still fits the 32 vector registers with the two constants."""
ITERATIONS = 20_000_000
REPEATS = 3


def kernel_text(lanes: int, chains: int = CHAINS) -> str:
    """Upstream MLIR of ``fma_loop(n: index) -> f32``: ``chains`` FMA chains of ``lanes``
    f32, ``n`` iterations, summed at the end (so no chain is dead). Each chain starts at
    its own value away from the fixed point 1.0 of ``x * 0.999 + 0.001``."""
    vec = f"vector<{lanes}xf32>"
    xs = [f"%x{i}" for i in range(chains)]
    ys = [f"%y{i}" for i in range(chains)]
    inits = "\n".join(f"    %init{i} = arith.constant dense<{0.5 + i / 64}> : {vec}"
                      for i in range(chains))  # distinct, so no two chains are merged
    iter_args = ", ".join(f"{x} = %init{i}" for i, x in enumerate(xs))
    body = "\n".join(f"      {y} = vector.fma {x}, %m, %a : {vec}" for x, y in zip(xs, ys, strict=True))
    sums = [f"%r#{i}" for i in range(chains)]
    adds, acc = [], sums[0]
    for i, term in enumerate(sums[1:]):
        adds.append(f"    %s{i} = arith.addf {acc}, {term} : {vec}")
        acc = f"%s{i}"
    return f"""
func.func @fma_loop(%n: index) -> f32 {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = arith.constant dense<0.999> : {vec}
    %a = arith.constant dense<0.001> : {vec}
{inits}
    %r:{chains} = scf.for %i = %c0 to %n step %c1 iter_args({iter_args}) -> ({", ".join([vec] * chains)}) {{
{body}
      scf.yield {", ".join(ys)} : {", ".join([vec] * chains)}
    }}
{chr(10).join(adds)}
    %total = vector.reduction <add>, {acc} : {vec} into f32
    return %total : f32
}}
"""


def compiled_loop(lanes: int) -> Callable[[int], float]:
    """``fma_loop`` compiled for this CPU by MLIR's ExecutionEngine (a ctypes function:
    calling it releases the GIL, so threads run it on several cores at once)."""
    from mlir import ir
    from mlir.execution_engine import ExecutionEngine
    from mlir.passmanager import PassManager

    with ir.Context():
        module = ir.Module.parse(kernel_text(lanes))
        PassManager.parse("builtin.module(convert-scf-to-cf,convert-vector-to-llvm,"
                          "convert-to-llvm,reconcile-unrealized-casts)").run(module.operation)
        engine = ExecutionEngine(module, opt_level=2)
    packed = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p))(
        engine.raw_lookup("fma_loop"))  # MLIR's packed interface: void(void **args)

    def function(iterations: int) -> float:
        n, result = ctypes.c_int64(iterations), ctypes.c_float()
        args = (ctypes.c_void_p * 2)(ctypes.addressof(n), ctypes.addressof(result))
        packed(args)
        return result.value

    function.engine = engine  # keep the code alive as long as the function
    return function


def gflops(function, threads: int, lanes: int) -> float:
    """Best GFLOP/s of ``REPEATS`` runs of ``threads`` concurrent calls."""
    flop = threads * ITERATIONS * CHAINS * lanes * 2
    best = 0.0
    for _ in range(REPEATS):
        workers = [threading.Thread(target=function, args=(ITERATIONS,)) for _ in range(threads)]
        start = time.perf_counter()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best = max(best, flop / (time.perf_counter() - start) / 1e9)
    return best


def widest_lanes() -> int:
    with open("/proc/cpuinfo") as info:
        return 16 if "avx512f" in info.read() else 8


def measure() -> dict[str, float | int]:
    """``{"lanes", "chains", "per_core", "all_cores", "cores"}`` (GFLOP/s)."""
    lanes = widest_lanes()
    function = compiled_loop(lanes)
    function(1000)  # first call: page in the code
    cores = len(os.sched_getaffinity(0))
    return {"lanes": lanes, "chains": CHAINS, "cores": cores,
            "per_core": round(gflops(function, 1, lanes), 1),
            "all_cores": round(gflops(function, cores, lanes), 1)}


if __name__ == "__main__":
    json.dump(measure(), sys.stdout)
    print()
