"""Indexing backward ops (SPEC 3 rows 15, 16, 3.5, 9.29): the reverse running sum of
``rlx.cumsum`` and the scatter-add adjoint of the clamped ``rlx.gather``.

    %dx = rlx.cumsum_backward %dy {axis = 0 : i64, exclusive = true}
            : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %dw = rlx.gather_backward %dy, %ids {axis = 0 : i64}
            : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects import arith, tensor
from xdsl.dialects.builtin import IndexType, TensorType, i64
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    COMPLEX_DTYPES,
    RlxOp,
    ShapeError,
    expect_index,
    expect_same_dtype,
    fmt_shape,
    norm_axis,
    optional,
    shape_of,
)
from rlx_mlir.dialects.linalg import (
    NUMERIC_DTYPES,
    accumulate,
    cumsum,
    expect_dtype,
    for_loop,
    insert_at,
    lower_running_sum,
    slice_at,
)
from rlx_mlir.dialects.shape import index_positions
from rlx_mlir.rules import INTERPRET, LOWER, VJP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext


def _declared(op_name: str, out) -> TensorType:
    if not out:
        raise ShapeError(f"'{op_name}' needs its result type (the caller-given shape)")
    return out[0]


# ---------------------------------------------------------------- cumsum_backward


@irdl_op_definition
class CumsumBackwardOp(RlxOp):
    """The VJP of ``rlx.cumsum``: a reverse running sum of ``dy`` along ``axis`` (SPEC 3.5).

    Inclusive: ``dx_i = sum_{j >= i} dy_j``; exclusive: ``dx_i = sum_{j > i} dy_j`` (so
    the last entry is 0). Summed from the end, one add per element: O(n), no cancellation.
    The result type (the forward input's) is caller-given and must equal ``dy``'s.

    Example::

        %dx = rlx.cumsum_backward %dy {axis = -1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
    """

    name = "rlx.cumsum_backward"
    dy = operand_def(TensorType)
    result = result_def(TensorType)
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = {
        "axis": "i64, default -1 (the forward cumsum's axis; negative counts from the end)",
        "exclusive": "BoolAttr, default false (the forward cumsum's exclusive flag)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        result = _declared(cls.name, out)
        expect_dtype(cls, types[0], (*NUMERIC_DTYPES, *COMPLEX_DTYPES))
        if result != types[0]:
            raise ShapeError(f"result type {result} must equal dy's type {types[0]}")
        rank = len(shape_of(types[0]))
        if rank == 0:
            raise ShapeError(f"'{cls.name}' dy must have rank >= 1, got {types[0]}")
        norm_axis(optional(attrs, "axis", int, -1), rank)
        optional(attrs, "exclusive", bool, False)
        return [result]

    def axis(self) -> int:
        return norm_axis(self.attr("axis", -1), len(shape_of(self.dy.type)))


def reverse_cumsum(dy: np.ndarray, axis: int, exclusive: bool) -> np.ndarray:
    """``reverse_cumsum(np.array([1, 2, 3]), 0, True) -> [5, 3, 0]``."""
    return np.flip(cumsum(np.flip(dy, axis), axis, exclusive), axis)


@INTERPRET.register(CumsumBackwardOp)
def _interpret_cumsum_backward(op: CumsumBackwardOp, dy: np.ndarray) -> np.ndarray:
    return reverse_cumsum(dy, op.axis(), bool(op.attr("exclusive", False)))


# ---------------------------------------------------------------- gather_backward


@irdl_op_definition
class GatherBackwardOp(RlxOp):
    """The VJP of ``rlx.gather`` with respect to the table (SPEC 3 row 16, 9.29).

    ``out = 0; out[.., clamp(idx[k]), ..] += dy[.., k, ..]`` for every position ``k`` of
    the row-major flattened ``indices`` (``numel(indices)`` of them, whatever their rank).
    Indices are read exactly as ``rlx.gather`` reads them (f32 truncated toward zero,
    clamped to ``[0, extent - 1]``, NaN -> 0), so this is the exact adjoint of the
    clamped gather: an out-of-range index adds to the first or last row. ``dy`` has
    gather's result shape ``table[:axis] + indices.shape + table[axis+1:]``; the result
    type is the table's (caller-given). Duplicate indices accumulate in index order.

    Example::

        %dw = rlx.gather_backward %dy, %ids {axis = 0 : i64}
                : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<10x4xf32>
    """

    name = "rlx.gather_backward"
    dy = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = {
        "axis": "i64, default 0 (the forward gather's axis; negative counts from the end)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        result = _declared(cls.name, out)
        expect_dtype(cls, types[0], NUMERIC_DTYPES + COMPLEX_DTYPES)
        expect_same_dtype([types[0], result], f"'{cls.name}' dy and result")
        expect_index(types[1], f"'{cls.name}' indices")
        table = shape_of(result)
        if not table:
            raise ShapeError(f"'{cls.name}' result (the table) must have rank >= 1, got {result}")
        axis = norm_axis(optional(attrs, "axis", int, 0), len(table))
        if table[axis] == 0:
            raise ShapeError(f"'{cls.name}' cannot scatter into the empty dim {axis} of {result}")
        want = table[:axis] + shape_of(types[1]) + table[axis + 1:]
        if shape_of(types[0]) != want:
            raise ShapeError(
                f"dy must have gather's result shape {fmt_shape(want)} for table "
                f"{fmt_shape(table)}, indices {fmt_shape(shape_of(types[1]))} and axis {axis}, "
                f"got {fmt_shape(shape_of(types[0]))}"
            )
        return [result]

    def axis(self) -> int:
        return norm_axis(self.attr("axis", 0), len(shape_of(self.result.type)))


def clamped_positions(indices: np.ndarray, extent: int) -> np.ndarray:
    """The flat int64 rows ``rlx.gather`` reads: ``[-3, 1.7, 9] -> [0, 1, extent-1]``."""
    return np.clip(index_positions(indices).reshape(-1), 0, extent - 1)


@INTERPRET.register(GatherBackwardOp)
def _interpret_gather_backward(op: GatherBackwardOp, dy: np.ndarray,
                               indices: np.ndarray) -> np.ndarray:
    axis, table = op.axis(), shape_of(op.result.type)
    out = np.zeros(table, dtype=dy.dtype)
    rows = clamped_positions(indices, table[axis])
    flat = dy.reshape(table[:axis] + (rows.size,) + table[axis + 1:])
    np.add.at(np.moveaxis(out, axis, 0), rows, np.moveaxis(flat, axis, 0))
    return out


# ---------------------------------------------------------------- VJP rules (both ops are linear)


@VJP.register(CumsumBackwardOp)
def _vjp_cumsum_backward(ctx: VjpContext, op: CumsumBackwardOp, g: Tensor) -> list[Tensor | None]:
    """The adjoint of a reverse running sum is the forward running sum."""
    return [ctx.b.cumsum(g, axis=op.axis(), exclusive=bool(op.attr("exclusive", False)))]


@VJP.register(GatherBackwardOp)
def _vjp_gather_backward(ctx: VjpContext, op: GatherBackwardOp,
                         g: Tensor) -> list[Tensor | None]:
    """The adjoint of the clamped scatter-add is the clamped gather; indices get none."""
    _, indices = ctx.inputs(op)
    return [ctx.b.gather(g, indices, axis=op.axis()), None]


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# Both ops are linear: cumsum_backward in dy, gather_backward in dy (same indices).

from rlx_mlir.dialects.shape import (  # noqa: E402
    gather_rows,
    linear,
    linear_in_data,
    move_axis,
    reemit,
    unfold_batch,
)
from rlx_mlir.rules import JVP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.transforms.vmap import VmapContext

JVP.register(CumsumBackwardOp)(linear)
JVP.register(GatherBackwardOp)(linear_in_data)


# ---------------------------------------------------------------- batching rules (SPEC 6.2)


@VMAP.register(CumsumBackwardOp)
def _vmap_cumsum_backward(ctx: VmapContext, op: CumsumBackwardOp, xs, batched) -> list[Tensor]:
    return ctx.emit_like(op, xs, out_shapes=[shape_of(op.result.type)], axis=op.axis() + 1)


@VMAP.register(GatherBackwardOp)
def _vmap_gather_backward(ctx: VmapContext, op: GatherBackwardOp, xs,
                          batched) -> list[Tensor]:
    """Shared indices: scatter into ``[B, *table]`` at ``axis + 1``. Batched indices
    (SPEC 9.18): dy lifted with B moved before the index dims, indices clamped per element
    and offset into a table whose axis holds ``B * extent`` rows, then unfolded."""
    dy, indices = xs
    table, axis = shape_of(op.result.type), op.axis()
    if not batched[1]:
        return ctx.emit_like(op, xs, out_shapes=[table], axis=axis + 1)
    dy = move_axis(ctx.b, ctx.lift(dy, batched[0]), 0, axis)
    rows = gather_rows(ctx, indices, table[axis])
    folded = (*table[:axis], ctx.size * table[axis], *table[axis + 1:])
    summed = reemit(ctx.b, op, dy, rows, shape=folded, axis=axis)
    return [unfold_batch(ctx.b, summed, axis, ctx.size)]


# ---------------------------------------------------------------- LOWER rules


@LOWER.register(CumsumBackwardOp)
def _lower_cumsum_backward(op: CumsumBackwardOp, e: Any, dy: Any) -> Any:
    """A reverse running sum: scf.for over the axis from its end, one slice add per step."""
    return lower_running_sum(e, dy, op.axis(), bool(op.attr("exclusive", False)), reverse=True)


def clamped_row(s: Any, raw: Any, extent: int) -> Any:
    """An index scalar as gather reads it, as ``index``: clamp to ``[0, extent-1]`` (floats
    compare ordered, so NaN -> 0), then ``fptosi`` truncates (== floor once non-negative)."""
    if s.is_float(raw):
        low = s.select(s.cmp("ge", raw, 0.0), raw, 0.0)
        high = s.select(s.cmp("le", low, float(extent - 1)), low, float(extent - 1))
        raw = s.emit(arith.FPToSIOp(high, i64))
    else:
        raw = s.max(s.min(raw, extent - 1), 0)
    return s.emit(arith.IndexCastOp(raw, IndexType()))


@LOWER.register(GatherBackwardOp)
def _lower_gather_backward(op: GatherBackwardOp, e: Any, dy: Any, indices: Any) -> Any:
    """scf.for over the ``numel(indices)`` flattened positions k: add the slice
    ``dy[.., k, ..]`` into the clamped row of the zero-filled table (extract_slice,
    an in-place linalg.generic add, insert_slice). Work is ``numel(dy)`` adds, in index
    order (as the interpreter's ``np.add.at``), independent of the table's extent."""
    axis, table = op.axis(), shape_of(op.result.type)
    count = int(np.prod(shape_of(indices.type), dtype=np.int64))
    flat_idx = e.reshape(indices, (count,))
    flat_dy = e.reshape(dy, (*table[:axis], count, *table[axis + 1:]))

    def step(s: Any, k: Any, out: Any) -> list[Any]:
        raw = s.emit(tensor.ExtractOp(flat_idx, [k], flat_idx.type.element_type))
        row = clamped_row(s, raw, table[axis])
        total = accumulate(s, slice_at(s, flat_dy, axis, k), slice_at(s, out, axis, row))
        return [insert_at(s, total, out, axis, row)]

    return for_loop(e, count, [e.fill(0, table, dy.type.element_type)], step)[0]


OPS = [CumsumBackwardOp, GatherBackwardOp]
