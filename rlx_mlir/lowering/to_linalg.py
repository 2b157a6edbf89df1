"""The ``lower-to-linalg`` pass: every rlx op -> upstream ops on tensors, by its LOWER rule.

    rlx-opt model.mlir --lower-to-linalg

A rule is ``rule(op, emitter, *operands) -> value | [values]``; the emitter inserts
before ``op``, and the returned values replace its results (see ``emitter.py``).
An op with no rule is a located :class:`RlxError` naming it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from rlx_mlir.diagnostics import RlxError
from rlx_mlir.lowering.emitter import Emitter
from rlx_mlir.lowering.regions import drop_nested_materializations
from rlx_mlir.rules import LOWER
from rlx_mlir.transforms import register_pass


def is_rlx(op: Operation) -> bool:
    return op.name.startswith("rlx.")


def lower_op(op: Operation, shared: dict | None = None) -> None:
    """Replace one rlx op by the upstream ops its LOWER rule emits (``shared``: values
    rules emit once per block, see :meth:`Emitter.once`)."""
    rule = LOWER.lookup(op)
    emitter = Emitter(InsertPoint.before(op), shared)
    out = rule(op, emitter, *op.operands)
    values: Sequence[SSAValue] = out if isinstance(out, (list, tuple)) else [out]
    if len(values) != len(op.results):
        raise RlxError(
            f"LOWER rule of '{op.name}' returned {len(values)} values for "
            f"{len(op.results)} results (internal error)", op=op)
    for result, value in zip(op.results, values, strict=True):
        if value.type != result.type:
            raise RlxError(
                f"LOWER rule of '{op.name}' produced {value.type}, declared {result.type} "
                "(internal error)", op=op)
        result.replace_all_uses_with(value)
    Rewriter.erase_op(op)


def lower_module(module: ModuleOp) -> None:
    """Lower until no rlx op is left (rules may move regions holding more rlx ops)."""
    shared: dict = {}
    while True:
        pending = [op for op in module.walk() if is_rlx(op)]
        if not pending:
            drop_nested_materializations(module)
            return
        for op in pending:
            if _attached(op, module):
                lower_op(op, shared)


def lowering_spec() -> str:
    """The environment settings the LOWER rules read, as text (part of the compile-cache
    key, with the upstream pipeline's :func:`~rlx_mlir.lowering.upstream.pipeline_spec`).

    >>> lowering_spec()   # doctest: +SKIP
    'causal-blocks=1'
    """
    from rlx_mlir.dialects.attention import causal_blocks

    return f"causal-blocks={causal_blocks()}"


def _attached(op: Operation, module: ModuleOp) -> bool:
    """False for ops inside a region that an earlier rule erased."""
    while op.parent_op() is not None:
        op = op.parent_op()  # type: ignore[assignment]
    return op is module


@register_pass
@dataclass(frozen=True)
class LowerToLinalg(ModulePass):
    """rlx -> linalg/tensor/arith/math/scf on tensors."""

    name = "lower-to-linalg"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        lower_module(op)
