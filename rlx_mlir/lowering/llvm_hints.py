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

And one of its O2 habits: vectorizing, unrolling and re-simplifying code that arrives
vectorized costs most of LLVM's optimisation time. A function whose loops all carry the
no-unroll note is optimised with :data:`LIGHT_PASSES` (SROA, CSE, LICM with loop
rotation, induction-variable simplification and memset idioms; transformer-block
gradient: 0.14 s less CPU for 0.8% of step time, GEMMs unchanged); a function holding a
scalar loop left to LLVM gets :data:`SCALAR_LOOPS` and the whole ``default<O2>`` (a small
CNN's gradient ran 1.4x slower without LLVM's unrolling of its windows), or, when each of
its scalar loops writes elements apart (a rope, a gather), :data:`PARALLEL_LOOPS` and only
LLVM's loop vectorizer on top of the light list (:data:`PARALLEL_PASSES`).
``RLX_LLVM_LIGHT=0`` gives every function ``default<O2>``.

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


LIGHT_MODULE = "rlx.light_llvm"
"""Unit attribute of a module whose functions went through the fast pipeline's schedules
(set by :func:`annotate_loops`): only there may vectorized functions get
:data:`LIGHT_PASSES` (the naive pipeline's loops are all scalar)."""

SCALAR_LOOPS = "rlx.scalar_loops"
"""Unit attribute of a function holding a loop left to LLVM (it reaches the LLVM dialect
header, where code generation reads it: :func:`llvm_passes`)."""

PARALLEL_LOOPS = "rlx.parallel_loops"
"""Unit attribute of a function with :data:`SCALAR_LOOPS` whose every scalar loop writes
elements apart (each store's address depends on the loop's induction variable: a rope,
a gather, an elementwise op no schedule vectorized): its code-generation part gets
:data:`PARALLEL_PASSES` instead of the whole ``default<O2>``."""

PARALLEL_PASSES = ("function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,"
                   "loop-mssa(licm,loop-rotate,licm),"
                   "loop(loop-idiom,indvars,loop-deletion,loop-unroll-full),simplifycfg,"
                   "loop-simplify,lcssa,loop-vectorize,instcombine<no-verify-fixpoint>,"
                   "simplifycfg)")
"""LLVM passes of functions with :data:`PARALLEL_LOOPS`: the light list, loops of constant
trip counts unrolled, then LLVM's loop vectorizer (without the rest of O2: its runtime
unrolling, SLP vectorizer and repeated simplifications). The LLaMA block's rope kernels:
0.05 against 0.17 s of LLVM for object code of 8 instead of 15 KB, the step unchanged."""

LIGHT_PASSES = ("function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,"
                "loop-mssa(licm,loop-rotate,licm),loop(loop-idiom,indvars,loop-deletion),"
                "simplifycfg)")
"""LLVM passes of functions whose loops the schedules vectorized (without LICM and loop
rotation the LLaMA step ran 5% slower; without InstCombine a vector ``pow(x, 2.0)`` -- any
``x ** c`` -- stayed one libm call per element, 30-136x slower than ``x * x``)."""


GLUE_PART = "// rlx-codegen: glue"
"""First line of a code-generation part holding only glue (``native._is_glue``): no
passes, machine code at O0."""


def codegen_plan(part: str, level: int) -> tuple[str, int]:
    """(LLVM pass pipeline, machine-code optimisation level) of one code-generation part
    at ``level``: glue at O0, else :func:`llvm_passes` at ``level``.

    >>> codegen_plan(GLUE_PART + "\\nmodule {...}", 2)
    ('default<O0>', 0)
    """
    if part.startswith(GLUE_PART) and light_passes_enabled():
        return "default<O0>", 0
    return llvm_passes(part, level), level


def light_passes_enabled() -> bool:
    """``RLX_LLVM_LIGHT`` (default 1): :data:`LIGHT_PASSES` for vectorized functions."""
    from rlx_mlir.diagnostics import int_setting

    return bool(int_setting("RLX_LLVM_LIGHT", 1, maximum=1))


def llvm_passes(part: str, level: int) -> str:
    """The LLVM pass pipeline for one code-generation part (LLVM-dialect text) at
    optimisation ``level``: :data:`LIGHT_PASSES` at O2 and above when no function of it
    holds scalar loops or coroutines (the async runtime's, which only the default
    pipelines lower), :data:`PARALLEL_PASSES` when all its functions with scalar loops
    have :data:`PARALLEL_LOOPS`, else ``default<O<level>>``.

    >>> llvm_passes("module {\\n  llvm.func @f() attributes {rlx.scalar_loops} {...}", 2)
    'default<O2>'
    """
    scalar = _scalar_loop_headers(part)
    if level < 2 or not _light_module(part) or any(PARALLEL_LOOPS not in h for h in scalar) \
            or "llvm.intr.coro" in part or llvm_unrolls() or not light_passes_enabled():
        return f"default<O{level}>"
    return PARALLEL_PASSES if scalar else LIGHT_PASSES


def _light_module(part: str) -> bool:
    """Whether the module line of ``part`` carries :data:`LIGHT_MODULE`."""
    return any(line.startswith("module") and LIGHT_MODULE in line
               for line in part.split("\n", 3)[:3])


def _scalar_loop_headers(part: str) -> list[str]:
    """The header lines of the functions ``part`` defines with :data:`SCALAR_LOOPS`
    (declarations of the other parts' functions keep their attributes)."""
    return [line for line in part.splitlines() if SCALAR_LOOPS in line and line.endswith("{")]


def llvm_unrolls() -> bool:
    """``RLX_LLVM_UNROLL=1``: leave loop unrolling to LLVM (slower compile, same code speed)."""
    return os.environ.get("RLX_LLVM_UNROLL", "0") not in ("", "0")


def unroll_stage_name() -> str:
    """The stage's cache-key text (it changes with ``RLX_LLVM_UNROLL``)."""
    return (f"python:loop-unroll={'llvm' if llvm_unrolls() else 'off'}"
            f":light-passes={int(light_passes_enabled())}:parallel-loops=1")


def _update(module: Any, names: tuple[str, ...], change: Callable[[Any], bool]) -> int:
    return sum(1 for op in walk_ops(module) if op.name in names and change(op))


def annotate_loops(module: Any) -> int:
    """Mark every ``scf.for`` around vector code not to be unrolled by LLVM; returns how
    many. Scalar loop nests (ops without a schedule, e.g. convolution windows) keep
    LLVM's unrolling: it is worth 7% on a small CNN's gradient; their functions get
    :data:`SCALAR_LOOPS`, and the module :data:`LIGHT_MODULE`."""
    from mlir import ir

    if llvm_unrolls():
        return 0
    module.operation.attributes[LIGHT_MODULE] = ir.UnitAttr.get()
    note = ir.Attribute.parse(NO_UNROLL)
    count = 0
    ops = walk_ops(module)
    for op in ops:
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
    _mark_scalar_loops([op for op in ops if op.name == "scf.for" and _MOVED not in op.attributes
                        and not _is_fill(op)])
    return count


_FILL_BODY = frozenset({"scf.for", "scf.yield", "memref.store", "arith.constant"})


def _is_fill(loop: Any) -> bool:
    """A loop nest that only stores constants or values from outside it (a lowered
    ``linalg.fill``: LLVM's loop-idiom pass makes it a ``memset`` in either pipeline)."""
    from mlir import ir

    inner: list[Any] = []

    def visit(op: Any) -> Any:
        inner.append(op)
        return ir.WalkResult.ADVANCE

    loop.walk(visit)
    return all(op.name in _FILL_BODY for op in inner) and all(
        op.operands[0].owner.name == "arith.constant" for op in inner
        if op.name == "memref.store" and isinstance(op.operands[0], ir.OpResult))


def _mark_scalar_loops(loops: list[Any]) -> None:
    """Give the function around each of ``loops`` :data:`SCALAR_LOOPS`, and
    :data:`PARALLEL_LOOPS` when each of its scalar loops writes elements apart."""
    from mlir import ir

    apart: dict[Any, bool] = {}
    for loop in loops:
        function = loop.parent
        while function is not None and function.name != "func.func":
            function = function.parent
        if function is not None:
            apart[function] = apart.get(function, True) and _writes_apart(loop)
    for function, parallel in apart.items():
        function.attributes[SCALAR_LOOPS] = ir.UnitAttr.get()
        if parallel:
            function.attributes[PARALLEL_LOOPS] = ir.UnitAttr.get()


_PLAIN_OPS = ("arith.", "math.", "index.", "complex.", "ub.", "scf.for", "scf.yield", "scf.if",
              "memref.load", "memref.store", "memref.subview", "memref.cast", "memref.get_global",
              "memref.expand_shape", "memref.collapse_shape", "memref.reinterpret_cast")
"""What a loop may hold to count as writing elements apart (no calls, copies or atomics)."""


def _writes_apart(loop: Any) -> bool:
    """Whether every iteration of ``loop`` (a scalar ``scf.for``) stores to other
    elements than the others: one iteration, or every ``memref.store`` in it addressed
    through the loop's induction variable, and nothing else in it writing memory. Only
    picks LLVM passes: its loop vectorizer checks what it may do itself."""
    from mlir import ir

    if _trip_count(loop) == 1:
        return True
    inner: list[Any] = []
    loop.walk(lambda op: inner.append(op) or ir.WalkResult.ADVANCE)
    if not all(op.name.startswith(_PLAIN_OPS) for op in inner):
        return False
    step = loop.regions[0].blocks[0].arguments[0]
    stores = [op for op in inner if op.name == "memref.store"]
    return all(_addresses_with(step, list(op.operands)[1:]) for op in stores)


def _addresses_with(value: Any, operands: list[Any]) -> bool:
    """Whether ``value`` flows into any of ``operands`` through the ops computing them
    (not through a load: an address read from memory, as in a scatter ``out[idx[i]]``,
    may repeat)."""
    from mlir import ir

    pending, seen = list(operands), set()
    while pending:
        operand = pending.pop()
        if operand == value:
            return True
        if isinstance(operand, ir.OpResult) and operand not in seen:
            seen.add(operand)
            if operand.owner.operation.name != "memref.load":
                pending.extend(operand.owner.operands)
    return False


def _trip_count(loop: Any) -> int | None:
    """The iterations of an ``scf.for`` with constant bounds and step, else None."""
    from mlir import ir

    bounds = []
    for operand in list(loop.operands)[:3]:
        if not isinstance(operand, ir.OpResult) or operand.owner.name != "arith.constant":
            return None
        bounds.append(ir.IntegerAttr(operand.owner.attributes["value"]).value)
    low, high, step = bounds
    return max(0, -(-(high - low) // step)) if step > 0 else None


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
