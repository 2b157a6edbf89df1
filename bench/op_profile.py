"""Op-level profile of a model's training step (not a test): every rlx op of the gradient
function compiled alone at its real shapes, timed natively, ranked.

    python bench/op_profile.py transformer [--top 25] [--threads 2]

The sum of the per-op times approximates the step (no fusion across ops is measured);
the ranking says which op's lowering to work on next.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.ir import Block, Region

sys.path.insert(0, os.path.dirname(__file__))


def _single_op_module(op) -> ModuleOp:
    """``func.func @op(operands...) -> results`` holding a clone of ``op``."""
    block = Block(arg_types=[v.type for v in op.operands])
    mapping = dict(zip(op.operands, block.args, strict=True))
    clone = op.clone(value_mapper=mapping)
    block.add_ops([clone, func.ReturnOp(*clone.results)])
    f = func.FuncOp("op", ([v.type for v in op.operands], [r.type for r in op.results]),
                    Region(block))
    return ModuleOp([f])


def _random_input(t: TensorType, rng: np.random.Generator) -> np.ndarray:
    from rlx_mlir.dialects.base import numpy_dtype, shape_of

    dtype = numpy_dtype(t)
    shape = tuple(shape_of(t))
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return np.ones(shape, np.bool_)
    return np.zeros(shape, dtype)


def _time(fn, seconds: float) -> float:
    fn()
    times = []
    started = time.perf_counter()
    while time.perf_counter() - started < seconds or len(times) < 3:
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def profile(module: ModuleOp, entry: str, seconds: float) -> list[tuple[float, float, str]]:
    """(median seconds, compile seconds, description) per op of ``entry``."""
    import rlx_mlir as rlx

    f = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == entry)
    rng = np.random.default_rng(0)
    rows = []
    for op in f.body.block.ops:
        if not op.name.startswith("rlx.") or op.name in ("rlx.constant",) or op.regions:
            continue
        single = _single_op_module(op)
        started = time.perf_counter()
        exe = rlx.compile(single, entry="op")
        ctime = time.perf_counter() - started
        args = [_random_input(v.type, rng) for v in op.operands]
        shapes = " ".join("x".join(map(str, v.type.get_shape())) for v in op.operands)
        attrs = op.attributes.get("wrt")
        label = f"{op.name}{'[' + attrs.data + ']' if attrs is not None else ''} ({shapes})"
        rows.append((_time(lambda exe=exe, args=args: exe(*args), seconds), ctime, label))
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("workload", choices=["mlp", "transformer", "llama"])
    p.add_argument("--top", type=int, default=30)
    p.add_argument("--seconds", type=float, default=0.3)
    p.add_argument("--threads", default="")
    args = p.parse_args(argv)
    if args.threads:
        os.environ["RLX_NUM_THREADS"] = args.threads
    from common import model_dims
    from peer_rlx import ENTRIES, build_model

    import rlx_mlir as rlx

    dims = model_dims(args.workload, quick=False)
    module = build_model(args.workload, dims)
    grad = rlx.grad_with_loss(module, ENTRIES[args.workload])
    rows = profile(module, grad.sym_name.data, args.seconds)
    total = sum(r[0] for r in rows)
    print(f"{len(rows)} ops, sum {total * 1e3:.1f} ms, compile sum {sum(r[1] for r in rows):.1f} s")
    for t, c, label in sorted(rows, reverse=True)[: args.top]:
        print(f"{t * 1e3:9.3f} ms {100 * t / total:5.1f}%  compile {c:5.2f}s  {label}")
    print_by_kind([(label.split(" ")[0], t * 1e3) for t, _, label in rows])
    return 0


def print_by_kind(kinds_ms: list[tuple[str, float]]) -> None:
    """Milliseconds and shares summed per kind, largest first."""
    by_kind: dict[str, float] = defaultdict(float)
    for kind, ms in kinds_ms:
        by_kind[kind] += ms
    total = sum(by_kind.values())
    print("by kind:")
    for kind, ms in sorted(by_kind.items(), key=lambda kv: -kv[1]):
        print(f"{ms:9.3f} ms {100 * ms / total:5.1f}%  {kind}")


if __name__ == "__main__":
    raise SystemExit(main())
