"""Shape family: reshape, transpose, expand, concat, narrow, gather and scatter_add
(SPEC 2.1.17-2.1.19).

Data movement only: every op keeps its operand's element type::

    %t = rlx.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %e = rlx.gather %w, %ids : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>

Index operands (gather, scatter_add) are i32, i64 or f32-encoded integers; an f32
index is truncated toward zero and NaN counts as out of range. Out-of-range indices
are clamped by ``rlx.gather`` and dropped by ``rlx.scatter_add`` (JAX's defaults).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def, var_operand_def

from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    dtype_of,
    expect_index,
    expect_same_dtype,
    fmt_shape,
    norm_axis,
    optional,
    require,
    shape_of,
    tensor,
)
from rlx_mlir.rules import INTERPRET, VJP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext

DATA_DTYPES = ("f32", "f64", "i1", "i32", "i64")
"""Element types every data-movement op accepts."""
NUMERIC_DTYPES = ("f32", "f64", "i32", "i64")
"""Element types that can be accumulated (scatter_add)."""


# ---------------------------------------------------------------- helpers


def expect_dtype(t: TensorType, allowed: Sequence[str], what: str) -> str:
    """The dtype of ``t``; ShapeError unless it is one of ``allowed``."""
    dtype = dtype_of(t)
    if dtype not in allowed:
        raise ShapeError(f"{what} has element type {dtype} (supported: {', '.join(allowed)})")
    return dtype


def expect_ranked(t: TensorType, what: str) -> tuple[int, ...]:
    """The shape of ``t``; ShapeError when it is a rank-0 tensor."""
    shape = shape_of(t)
    if not shape:
        raise ShapeError(f"{what} must have rank >= 1, got {t}")
    return shape


def result_type(op_name: str, out: Sequence[TensorType] | None) -> TensorType:
    """The declared result type of a RESULT_FROM_TYPE op (required)."""
    if not out:
        raise ShapeError(f"'{op_name}' needs its result type")
    return out[0]


def index_positions(indices: np.ndarray) -> np.ndarray:
    """Indices as int64: f32 truncated toward zero, NaN -> -1 (out of range).

    >>> index_positions(np.array([1.9, -0.5, np.nan], np.float32)).tolist()
    [1, 0, -1]
    """
    if indices.dtype.kind != "f":
        return indices.astype(np.int64)
    bound = float(2**62)
    safe = np.clip(np.nan_to_num(np.trunc(indices), nan=-1.0), -bound, bound)
    return safe.astype(np.int64)


# ---------------------------------------------------------------- reshape


@irdl_op_definition
class ReshapeOp(RlxOp):
    """Same elements in row-major order; the new shape is the result type's.

    Example::

        %y = rlx.reshape %x : (tensor<2x6xf32>) -> tensor<3x4xf32>
    """

    name = "rlx.reshape"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_dtype(types[0], DATA_DTYPES, "'rlx.reshape' operand")
        target = result_type(cls.name, out)
        src, dst = shape_of(types[0]), shape_of(target)
        if math.prod(src) != math.prod(dst):
            raise ShapeError(
                f"cannot reshape {fmt_shape(src)} ({math.prod(src)} elements) to "
                f"{fmt_shape(dst)} ({math.prod(dst)} elements)"
            )
        return [tensor(dst, dtype)]


@INTERPRET.register(ReshapeOp)
def _interpret_reshape(op: ReshapeOp, x: np.ndarray) -> np.ndarray:
    return x.reshape(shape_of(op.result.type))


# ---------------------------------------------------------------- transpose


def norm_perm(perm: Sequence[int], rank: int) -> tuple[int, ...]:
    """Normalise a permutation of ``range(rank)`` (negative entries count from the end).

    >>> norm_perm((-1, 0), 2)
    (1, 0)
    """
    if len(perm) != rank:
        raise ShapeError(f"perm {fmt_shape(perm)} has {len(perm)} entries, expected {rank}")
    normal = tuple(norm_axis(p, rank, "perm entry") for p in perm)
    if sorted(normal) != list(range(rank)):
        raise ShapeError(f"perm {fmt_shape(perm)} is not a permutation of 0..{rank - 1}")
    return normal


@irdl_op_definition
class TransposeOp(RlxOp):
    """Permute the axes: ``out.dims[i] = in.dims[perm[i]]``.

    Example::

        %y = rlx.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
    """

    name = "rlx.transpose"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "perm": "array<i64>, required: a permutation of 0..rank-1 (negative entries allowed)"
    }

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_dtype(types[0], DATA_DTYPES, "'rlx.transpose' operand")
        shape = shape_of(types[0])
        perm = norm_perm(require(attrs, "perm", tuple), len(shape))
        return [tensor([shape[p] for p in perm], dtype)]


@INTERPRET.register(TransposeOp)
def _interpret_transpose(op: TransposeOp, x: np.ndarray) -> np.ndarray:
    return np.transpose(x, norm_perm(op.attr("perm"), x.ndim))


# ---------------------------------------------------------------- expand


def expect_broadcastable(src: Sequence[int], dst: Sequence[int]) -> None:
    """``src`` broadcasts to ``dst`` (left-padded with 1s, each dim 1 or equal)."""
    if len(src) > len(dst):
        raise ShapeError(f"cannot expand {fmt_shape(src)} to lower rank {fmt_shape(dst)}")
    padded = (1,) * (len(dst) - len(src)) + tuple(src)
    for axis, (s, d) in enumerate(zip(padded, dst, strict=True)):
        if s not in (1, d):
            raise ShapeError(
                f"cannot expand {fmt_shape(src)} to {fmt_shape(dst)}: "
                f"dim {axis} is {s}, expected 1 or {d}"
            )


@irdl_op_definition
class ExpandOp(RlxOp):
    """NumPy broadcast of ``x`` to the result type's shape (``x`` left-padded with 1s).

    Example::

        %y = rlx.expand %x : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
    """

    name = "rlx.expand"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_dtype(types[0], DATA_DTYPES, "'rlx.expand' operand")
        dst = shape_of(result_type(cls.name, out))
        expect_broadcastable(shape_of(types[0]), dst)
        return [tensor(dst, dtype)]


@INTERPRET.register(ExpandOp)
def _interpret_expand(op: ExpandOp, x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x, shape_of(op.result.type)).copy()


# ---------------------------------------------------------------- concat


@irdl_op_definition
class ConcatOp(RlxOp):
    """Concatenate one or more tensors along ``axis``; all other dims are equal.

    Example::

        %y = rlx.concat %a, %b {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x5xf32>) -> tensor<2x8xf32>
    """

    name = "rlx.concat"
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"axis": "i64, required (negative counts from the end)"}

    @classmethod
    def infer(cls, types, attrs, out):
        if not types:
            raise ShapeError("'rlx.concat' needs at least one operand")
        dtype = expect_same_dtype(types, "'rlx.concat' operands")
        expect_dtype(types[0], DATA_DTYPES, "'rlx.concat' operand")
        first = expect_ranked(types[0], "'rlx.concat' operand")
        axis = norm_axis(require(attrs, "axis", int), len(first))
        total = 0
        for i, t in enumerate(types):
            shape = shape_of(t)
            if len(shape) != len(first) or _drop(shape, axis) != _drop(first, axis):
                raise ShapeError(
                    f"operand {i} has shape {fmt_shape(shape)}, incompatible with "
                    f"{fmt_shape(first)} for concatenation along axis {axis}"
                )
            total += shape[axis]
        return [tensor(first[:axis] + (total,) + first[axis + 1:], dtype)]


def _drop(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return shape[:axis] + shape[axis + 1:]


@INTERPRET.register(ConcatOp)
def _interpret_concat(op: ConcatOp, *xs: np.ndarray) -> np.ndarray:
    return np.concatenate(xs, axis=op.attr("axis"))


# ---------------------------------------------------------------- narrow


@irdl_op_definition
class NarrowOp(RlxOp):
    """The slice ``[start, start + length)`` along ``axis``.

    Needs ``0 <= start``, ``length >= 1`` and ``start + length <= dims[axis]``.

    Example::

        %y = rlx.narrow %x {axis = 1 : i64, start = 2 : i64, length = 3 : i64} : (tensor<4x8xf32>) -> tensor<4x3xf32>
    """

    name = "rlx.narrow"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "axis": "i64, required (negative counts from the end)",
        "start": "i64, required: first index kept (>= 0)",
        "length": "i64, required: number of indices kept (>= 1)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_dtype(types[0], DATA_DTYPES, "'rlx.narrow' operand")
        shape = expect_ranked(types[0], "'rlx.narrow' operand")
        axis = norm_axis(require(attrs, "axis", int), len(shape))
        start, length = require(attrs, "start", int), require(attrs, "length", int)
        if start < 0 or length < 1 or start + length > shape[axis]:
            raise ShapeError(
                f"narrow [{start}, {start + length}) is out of range for dim {axis} "
                f"of size {shape[axis]} (need 0 <= start, length >= 1, "
                f"start + length <= {shape[axis]})"
            )
        return [tensor(shape[:axis] + (length,) + shape[axis + 1:], dtype)]


@INTERPRET.register(NarrowOp)
def _interpret_narrow(op: NarrowOp, x: np.ndarray) -> np.ndarray:
    axis = norm_axis(op.attr("axis"), x.ndim)
    start = op.attr("start")
    return np.take(x, np.arange(start, start + op.attr("length")), axis=axis)


# ---------------------------------------------------------------- gather


@irdl_op_definition
class GatherOp(RlxOp):
    """Index-select along ``axis`` (``np.take(table, indices, axis)``).

    Result shape ``table.shape[:axis] + indices.shape + table.shape[axis+1:]``; on
    axis 0 with indices ``[B, S]`` and table ``[V, D]`` that is an embedding
    ``[B, S, D]``. Out-of-range indices are **clamped** to ``[0, dims[axis] - 1]``
    (f32 indices are truncated toward zero first; NaN reads index 0).

    Example::

        %y = rlx.gather %table, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
    """

    name = "rlx.gather"
    table = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "axis": "i64, default 0 (negative counts from the end)"
    }

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_dtype(types[0], DATA_DTYPES, "'rlx.gather' table")
        expect_index(types[1], "'rlx.gather' indices")
        table = expect_ranked(types[0], "'rlx.gather' table")
        axis = norm_axis(optional(attrs, "axis", int, 0), len(table))
        if table[axis] == 0:
            raise ShapeError(f"'rlx.gather' cannot index the empty dim {axis} of {types[0]}")
        return [tensor(table[:axis] + shape_of(types[1]) + table[axis + 1:], dtype)]


@INTERPRET.register(GatherOp)
def _interpret_gather(op: GatherOp, table: np.ndarray, indices: np.ndarray) -> np.ndarray:
    axis = norm_axis(op.attr("axis", 0), table.ndim)
    clamped = np.clip(index_positions(indices), 0, table.shape[axis] - 1)
    return np.take(table, clamped, axis=axis)


# ---------------------------------------------------------------- scatter_add


@irdl_op_definition
class ScatterAddOp(RlxOp):
    """``out = 0; out[.., idx[i], ..] += updates[.., i, ..]`` along ``axis``.

    ``indices`` is rank 1 with one entry per ``updates.shape[axis]``; the output
    extent along ``axis`` comes from the result type. Duplicate indices accumulate;
    out-of-range indices (negative, ``>= extent``, NaN) are **dropped**.

    Example::

        %y = rlx.scatter_add %u, %ids {axis = 0 : i64} : (tensor<5x4xf32>, tensor<5xi64>) -> tensor<10x4xf32>
    """

    name = "rlx.scatter_add"
    updates = operand_def(TensorType)
    indices = operand_def(TensorType)
    result = result_def(TensorType)
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = {
        "axis": "i64, default 0 (negative counts from the end)"
    }

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_dtype(types[0], NUMERIC_DTYPES, "'rlx.scatter_add' updates")
        expect_index(types[1], "'rlx.scatter_add' indices")
        updates = expect_ranked(types[0], "'rlx.scatter_add' updates")
        axis = norm_axis(optional(attrs, "axis", int, 0), len(updates))
        indices = shape_of(types[1])
        if indices != (updates[axis],):
            raise ShapeError(
                f"indices must have shape [{updates[axis]}] (one per updates dim {axis}), "
                f"got {fmt_shape(indices)}"
            )
        target = result_type(cls.name, out)
        dst = shape_of(target)
        if len(dst) != len(updates) or _drop(dst, axis) != _drop(updates, axis):
            raise ShapeError(
                f"result shape {fmt_shape(dst)} must equal the updates shape "
                f"{fmt_shape(updates)} except along axis {axis}"
            )
        return [tensor(dst, dtype)]


@INTERPRET.register(ScatterAddOp)
def _interpret_scatter_add(op: ScatterAddOp, updates: np.ndarray,
                           indices: np.ndarray) -> np.ndarray:
    axis = norm_axis(op.attr("axis", 0), updates.ndim)
    out = np.zeros(shape_of(op.result.type), dtype=updates.dtype)
    positions = index_positions(indices)
    keep = (positions >= 0) & (positions < out.shape[axis])
    np.add.at(np.moveaxis(out, axis, 0), positions[keep], np.moveaxis(updates, axis, 0)[keep])
    return out


# ---------------------------------------------------------------- VJP rules (SPEC 5.1, 5.8)


@VJP.register(ReshapeOp)
def _vjp_reshape(ctx: VjpContext, op: ReshapeOp, g: Tensor) -> list[Tensor | None]:
    (x,) = ctx.inputs(op)
    return [ctx.b.reshape(g, x.shape)]


@VJP.register(TransposeOp)
def _vjp_transpose(ctx: VjpContext, op: TransposeOp, g: Tensor) -> list[Tensor | None]:
    perm = norm_perm(op.attr("perm"), len(g.shape))
    inverse = [perm.index(i) for i in range(len(perm))]
    return [ctx.b.transpose(g, perm=inverse)]


@VJP.register(ExpandOp)
def _vjp_expand(ctx: VjpContext, op: ExpandOp, g: Tensor) -> list[Tensor | None]:
    (x,) = ctx.inputs(op)
    return [ctx.unbroadcast(g, x.shape)]


@VJP.register(ConcatOp)
def _vjp_concat(ctx: VjpContext, op: ConcatOp, g: Tensor) -> list[Tensor | None]:
    """Each operand gets its slice of ``g`` along the axis."""
    axis = op.attr("axis") % g.ndim
    grads, offset = [], 0
    for x in ctx.inputs(op):
        grads.append(ctx.b.narrow(g, axis=axis, start=offset, length=x.shape[axis]))
        offset += x.shape[axis]
    return grads


@VJP.register(NarrowOp)
def _vjp_narrow(ctx: VjpContext, op: NarrowOp, g: Tensor) -> list[Tensor | None]:
    """``g`` padded with zeros back to the operand's extent (zeros of g's dtype)."""
    (x,) = ctx.inputs(op)
    axis, start, length = op.attr("axis") % x.ndim, op.attr("start"), op.attr("length")
    pieces = []
    for extent in (start, x.shape[axis] - start - length):
        shape = list(x.shape)
        shape[axis] = extent
        pieces.append(ctx.zeros(shape, g.dtype) if extent else None)
    parts = [p for p in (pieces[0], g, pieces[1]) if p is not None]
    return [ctx.b.concat(*parts, axis=axis) if len(parts) > 1 else g]


def _clamped(ctx: VjpContext, indices: Tensor, extent: int) -> Tensor:
    """Indices clamped to [0, extent-1] exactly as gather reads them."""
    low = ctx.b.full((), 0, indices.dtype)
    high = ctx.b.full((), extent - 1, indices.dtype)
    return ctx.b.max(ctx.b.min(indices, high), low)


@VJP.register(GatherOp)
def _vjp_gather(ctx: VjpContext, op: GatherOp, g: Tensor) -> list[Tensor | None]:
    """Scatter-add ``g`` back into the table at the (clamped) indices; indices get none."""
    table, indices = ctx.inputs(op)
    axis = op.attr("axis", 0) % table.ndim
    count = int(np.prod(indices.shape))
    flat_g = ctx.b.reshape(g, (*table.shape[:axis], count, *table.shape[axis + 1:]))
    flat_idx = ctx.b.reshape(_clamped(ctx, indices, table.shape[axis]), (count,))
    return [ctx.b.scatter_add(flat_g, flat_idx, table.shape[axis], axis=axis), None]


@VJP.register(ScatterAddOp)
def _vjp_scatter_add(ctx: VjpContext, op: ScatterAddOp, g: Tensor) -> list[Tensor | None]:
    """Gather ``g`` at the indices; dropped (out-of-range) indices get zero gradient."""
    updates, indices = ctx.inputs(op)
    axis = op.attr("axis", 0) % updates.ndim
    extent = g.shape[axis]
    gathered = ctx.b.gather(g, indices, axis=axis)
    zero, high = ctx.b.full((), 0, indices.dtype), ctx.b.full((), extent, indices.dtype)
    ge0 = ctx.b.compare(indices, zero, predicate="ge")
    below = ctx.b.compare(indices, high, predicate="lt")
    valid = ctx.b.where(ge0, below, ge0)
    keep = [1] * updates.ndim
    keep[axis] = updates.shape[axis]
    mask = ctx.b.reshape(valid, keep)
    return [ctx.b.where(mask, gathered, ctx.zeros((), g.dtype)), None]


OPS = [ReshapeOp, TransposeOp, ExpandOp, ConcatOp, NarrowOp, GatherOp, ScatterAddOp]
