"""Hints that steer LLVM's own optimiser (upstream bindings, fast pipeline).

The schedules already tile, vectorize and unroll what matters (register tiles, full
vector unrolls), so two of LLVM's O3 habits only cost compile time:

* **loop unrolling**: LLVM unrolled the vectorized loops again, doubling the machine code
  (transformer-block gradient: 374 -> 164 KB of text, LLVM 3.1 -> 1.4 s) for no measured
  speed (GEMMs and training steps within 0.5%). :func:`annotate_loops` puts
  ``llvm.loop.unroll.disable`` on every ``scf.for`` around vector code before
  ``convert-scf-to-cf``, and
  :func:`move_loop_annotations` moves what that pass copies onto the latch branch into the
  ``loop_annotation`` property that translation reads. ``RLX_LLVM_UNROLL=1`` turns it off.
* **inlining the outlined parallel bodies** into both their caller and their coroutine:
  :func:`keep_parallel_bodies_outlined` marks them ``noinline``.

Example (the stage list of :mod:`rlx_mlir.lowering.upstream`)::

    Stage("no-unroll", unroll_stage_name(), annotate_loops)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from rlx_mlir.lowering.schedules import walk_ops

NO_UNROLL = "#llvm.loop_annotation<unroll = #llvm.loop_unroll<disable = true>>"
"""What every loop gets (parsed in the module's context)."""

_MOVED = "llvm.loop_annotation"  # discardable copy left by convert-scf-to-cf
_PROPERTY = "loop_annotation"  # what the LLVM IR translation reads


def llvm_unrolls() -> bool:
    """``RLX_LLVM_UNROLL=1``: leave loop unrolling to LLVM (slower compile, same code speed)."""
    return os.environ.get("RLX_LLVM_UNROLL", "0") not in ("", "0")


def unroll_stage_name() -> str:
    """The stage's cache-key text (it changes with ``RLX_LLVM_UNROLL``)."""
    return f"python:loop-unroll={'llvm' if llvm_unrolls() else 'off'}"


def _update(module: Any, names: tuple[str, ...], change: Callable[[Any], bool]) -> int:
    return sum(1 for op in walk_ops(module) if op.name in names and change(op))


def annotate_loops(module: Any) -> int:
    """Mark every ``scf.for`` around vector code not to be unrolled by LLVM; returns how
    many. Scalar loop nests (ops without a schedule, e.g. convolution windows) keep
    LLVM's unrolling: it is worth 7% on a small CNN's gradient."""
    from mlir import ir

    if llvm_unrolls():
        return 0
    note = ir.Attribute.parse(NO_UNROLL)
    count = 0
    for op in walk_ops(module):
        if not any(isinstance(r.type, ir.VectorType) for r in op.results):
            continue
        parent = op.parent
        while parent is not None and parent.name != "func.func":
            if parent.name == "scf.for":
                if _MOVED in parent.attributes:
                    break  # this loop and the ones around it are marked already
                parent.attributes[_MOVED] = note
                count += 1
            parent = parent.parent
    return count


def move_loop_annotations(module: Any) -> int:
    """LLVM-dialect latch branches: the copied attribute -> the ``loop_annotation`` property."""

    def move(op: Any) -> bool:
        if _MOVED not in op.attributes:
            return False
        op.attributes[_PROPERTY] = op.attributes[_MOVED]
        del op.attributes[_MOVED]
        return True

    return _update(module, ("llvm.br", "llvm.cond_br"), move)


def _outlined(name: str) -> bool:
    return name.startswith("parallel_compute_fn") or "_kernel_" in name


def keep_parallel_bodies_outlined(module: Any) -> int:
    """Mark the loop bodies ``async-parallel-for`` outlined (``parallel_compute_fn*``)
    ``noinline``: at O3 LLVM otherwise inlines each body into both its caller and its
    coroutine, and compiles every kernel two or three times (the transformer-block
    gradient: 6.8 -> 3.6 s of LLVM code generation, same speed). Returns how many."""
    from mlir import ir

    count = 0
    for op in module.body.operations:
        name = op.attributes["sym_name"] if "sym_name" in op.attributes else None
        if op.name == "llvm.func" and name is not None and \
                _outlined(ir.StringAttr(name).value):
            op.attributes["passthrough"] = ir.ArrayAttr.get([ir.StringAttr.get("noinline")])
            count += 1
    return count


def finish_llvm_module(module: Any) -> None:
    """The last stage: parallel bodies stay outlined, loop annotations reach translation."""
    keep_parallel_bodies_outlined(module)
    move_loop_annotations(module)
