"""Kernel-level profile of a model's training step, inside the real compiled step (not a
test): before the schedules run, a call ``@rlx_prof_mark(i)`` is put in front of every
top-level linalg op / loop of the gradient function; the compiled step calls back into
Python at each mark, and the time between two marks is charged to the op after the first.

    python bench/kernel_profile.py transformer [--top 30] [--calls 20]

Unlike ``op_profile.py`` (each rlx op compiled alone) this measures the fused, scheduled
kernels as the step runs them, with their real memory traffic and threads. A mark costs
about a microsecond, so tiny ops are overstated.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))

MARK = "rlx_prof_mark"
LABELS: list[str] = []
STAMPS: list[tuple[int, int]] = []


def _label(op) -> str:
    """``linalg.generic[exp,max] -> 8x4x1x256x256`` etc."""
    from mlir import ir

    kinds = sorted({inner.name.split(".")[-1] for region in op.regions for block in region.blocks
                    for inner in block.operations
                    if inner.name.startswith(("math.", "arith.max", "arith.div"))})
    shapes = ["x".join(map(str, ir.ShapedType(r.type).shape)) for r in op.results
              if isinstance(r.type, ir.ShapedType)]
    inner = f"[{','.join(kinds)}]" if kinds and op.name == "linalg.generic" else ""
    return f"{op.name}{inner} -> {' '.join(shapes)}"


def insert_marks(module) -> None:
    """A ``func.call @rlx_prof_mark(i)`` before each top-level op worth timing."""
    from mlir import ir
    from mlir.dialects import arith, func

    with ir.Location.unknown(module.context):
        i64 = ir.IntegerType.get_signless(64)
        with ir.InsertionPoint.at_block_begin(module.body):
            decl = func.FuncOp(MARK, ([i64], []), visibility="private")
            decl.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        for f in [o.operation for o in module.body.operations]:
            if f.name != "func.func" or f == decl.operation or not f.regions[0].blocks:
                continue
            ops = [o.operation for o in f.regions[0].blocks[0].operations]
            for op in ops:
                if op.name.startswith(("linalg.", "scf.")) or op.name == "func.return":
                    index = len(LABELS)
                    LABELS.append(_label(op) if op.name != "func.return" else "(end)")
                    with ir.InsertionPoint(op):
                        c = arith.ConstantOp(i64, index)
                        func.CallOp([], ir.FlatSymbolRefAttr.get(MARK), [c.result])


def _install() -> None:
    """Insert the marks at the start of the schedule stage; register the callback."""
    from rlx_mlir.lowering import upstream
    from rlx_mlir.runtime import jit

    fast = upstream.PIPELINES["fast"]

    def with_marks():
        stages = fast()
        i = next(n for n, s in enumerate(stages) if s.name == "schedule")
        stages.insert(i, upstream.Stage("profile-marks", "python:marks", insert_marks))
        return stages

    upstream.PIPELINES["fast"] = with_marks
    callback_type = ctypes.CFUNCTYPE(None, ctypes.c_int64)
    callback = callback_type(lambda i: STAMPS.append((i, time.perf_counter_ns())))

    def start(self) -> None:
        from mlir import ir
        from mlir.execution_engine import ExecutionEngine

        jit.tune_malloc()
        context = ir.Context()
        with context:
            module = ir.Module.parse(self.llvm_text)
            engine = ExecutionEngine(module, opt_level=jit.opt_level(),
                                     shared_libs=jit.runtime_libraries(self.llvm_text))
            engine.register_runtime(MARK, callback)
        self._handles = (context, module, engine, callback)
        self._lookup, self._packed_calls = engine.raw_lookup, True
        for name in self.signatures:
            self.function_address(name)

    jit.Engine.start = start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=["mlp", "transformer", "llama"])
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--calls", type=int, default=20)
    args = p.parse_args(argv)
    os.environ["RLX_CACHE_DIR"] = "off"
    _install()
    from common import model_dims, model_inputs
    from op_profile import print_by_kind
    from peer_rlx import compile_step, step_callable

    dims = model_dims(args.workload, quick=False)
    exe, wrt, _, _ = compile_step(args.workload, dims)
    run = step_callable(exe, wrt, args.workload, dims, model_inputs(args.workload, dims))
    run()
    run()
    per_op: dict[int, list[float]] = defaultdict(list)
    totals, before, after = [], [], []
    for _ in range(args.calls):
        STAMPS.clear()
        started = time.perf_counter_ns()
        run()
        ended = time.perf_counter_ns()
        totals.append((ended - started) / 1e6)
        before.append((STAMPS[0][1] - started) / 1e6)
        after.append((ended - STAMPS[-1][1]) / 1e6)
        for (i, t0), (_, t1) in zip(STAMPS, STAMPS[1:], strict=False):
            per_op[i].append((t1 - t0) / 1e6)
    rows = sorted(((float(np.median(ts)), LABELS[i], i) for i, ts in per_op.items()), reverse=True)
    spread = {i: (min(ts), max(ts)) for i, ts in per_op.items()}
    marked = sum(r[0] for r in rows)
    print(f"step {np.median(totals):.2f} ms (median of {args.calls}), "
          f"{marked:.2f} ms between marks, {len(rows)} kernels; "
          f"{np.median(before):.2f} ms before the first, {np.median(after):.2f} after the last")
    for t, label, i in rows[: args.top]:
        low, high = spread[i]
        print(f"{t:8.3f} ms {100 * t / marked:5.1f}%  ({low:.2f}-{high:.2f})  #{i:<3d} {label}")
    print_by_kind([(label.split(" ")[0].split("[")[0], t) for t, label, _ in rows])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
