"""Linear-algebra family: matmul, the reductions and cumsum (SPEC 2.1.7, 2.1.8, 2.2.3).

Matmul broadcasts its batch dims; reductions take any set of axes::

    %y = rlx.matmul %a, %w : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    %s = rlx.reduce_sum %x {axes = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
    %c = rlx.cumsum %x {axis = 0 : i64, exclusive = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    FLOAT_DTYPES,
    INT_DTYPES,
    RlxOp,
    ShapeError,
    broadcast_shapes,
    define_op,
    dtype_of,
    expect_same_dtype,
    fmt_shape,
    optional,
    require,
    shape_of,
    tensor,
)
from rlx_mlir.rules import INTERPRET, VJP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext

NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES


def expect_dtype(cls: type[RlxOp], t: TensorType, dtypes: Sequence[str]) -> str:
    """The dtype of ``t`` when ``cls`` supports it, else a ShapeError naming the choices."""
    dtype = dtype_of(t)
    if dtype not in dtypes:
        raise ShapeError(
            f"'{cls.name}' does not support element type {dtype} "
            f"(supported: {', '.join(dtypes)})"
        )
    return dtype


def norm_axes(axes: Sequence[int], rank: int) -> tuple[int, ...]:
    """Normalise a non-empty set of distinct axes: ``norm_axes((0, -1), 3) == (0, 2)``."""
    if not axes:
        raise ShapeError("attribute 'axes' must not be empty")
    normalised = []
    for axis in axes:
        if not -rank <= axis < rank:
            raise ShapeError(f"axis {axis} is out of range for rank {rank}")
        normalised.append(axis % rank)
    if len(set(normalised)) != len(normalised):
        raise ShapeError(f"duplicate axis in axes {fmt_shape(axes)} for rank {rank}")
    return tuple(normalised)


# ---------------------------------------------------------------- matmul


@irdl_op_definition
class MatmulOp(RlxOp):
    """``lhs [..., M, K] @ rhs [..., K, N] -> [..., M, N]``; batch dims broadcast.

    Example::

        %y = rlx.matmul %a, %b : (tensor<2x1x4x8xf32>, tensor<3x8x5xf32>) -> tensor<2x3x4x5xf32>
    """

    name = "rlx.matmul"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        lhs, rhs = (cls._matrix(t, what) for t, what in zip(types, ("lhs", "rhs"), strict=True))
        dtype = expect_same_dtype(types, f"'{cls.name}' operands")
        expect_dtype(cls, types[0], NUMERIC_DTYPES)
        if lhs[-1] != rhs[-2]:
            raise ShapeError(
                f"contraction dims differ: lhs {fmt_shape(lhs)} has K={lhs[-1]}, "
                f"rhs {fmt_shape(rhs)} has K={rhs[-2]}"
            )
        try:
            batch = broadcast_shapes(lhs[:-2], rhs[:-2])
        except ShapeError:
            raise ShapeError(
                f"batch dims {fmt_shape(lhs[:-2])} of lhs and {fmt_shape(rhs[:-2])} of rhs "
                "do not broadcast"
            ) from None
        return [tensor((*batch, lhs[-2], rhs[-1]), dtype)]

    @classmethod
    def _matrix(cls, t: TensorType, what: str) -> tuple[int, ...]:
        shape = shape_of(t)
        if len(shape) < 2:
            raise ShapeError(f"'{cls.name}' {what} must have rank >= 2, got {t}")
        return shape


@INTERPRET.register(MatmulOp)
def _interpret_matmul(op: MatmulOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.matmul(a, b)


# ---------------------------------------------------------------- reductions


class ReduceOp(RlxOp):
    """Reduce ``x`` over ``axes``; those axes are removed (or kept as 1 with ``keep_dims``)."""

    x = operand_def(TensorType)
    result = result_def(TensorType)

    DTYPES: ClassVar[tuple[str, ...]] = NUMERIC_DTYPES
    REDUCER: ClassVar[Callable[[np.ndarray, tuple[int, ...], bool], np.ndarray]]
    ATTRS: ClassVar[dict[str, str]] = {
        "axes": "array<i64: ...>, required, non-empty, distinct; negative counts from the end",
        "keep_dims": "BoolAttr, default false (true keeps each reduced axis as extent 1)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_dtype(cls, types[0], cls.DTYPES)
        shape = shape_of(types[0])
        axes = norm_axes(require(attrs, "axes", tuple), len(shape))
        keep = optional(attrs, "keep_dims", bool, False)
        if keep:
            return [tensor([1 if i in axes else d for i, d in enumerate(shape)], dtype)]
        return [tensor([d for i, d in enumerate(shape) if i not in axes], dtype)]

    def reduced_axes(self) -> tuple[int, ...]:
        return norm_axes(self.attr("axes"), len(shape_of(self.x.type)))


def _extreme(fn: Callable, pick: Callable[[np.dtype], float | int]):
    """max/min with SPEC's initial value (-inf / +inf, or the int limits) for empty axes."""

    def reduce(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
        return fn(x, axis=axes, keepdims=keep, initial=pick(x.dtype))

    return reduce


def _float_or_int_limit(sign: int) -> Callable[[np.dtype], float | int]:
    def pick(dtype: np.dtype) -> float | int:
        if dtype.kind == "f":
            return sign * np.inf
        info = np.iinfo(dtype)
        return info.max if sign > 0 else info.min

    return pick


REDUCERS: dict[str, tuple[Callable, tuple[str, ...], str]] = {
    "sum": (lambda x, a, k: np.sum(x, axis=a, keepdims=k, dtype=x.dtype),
            NUMERIC_DTYPES, "Sum (0 over empty axes)"),
    "mean": (lambda x, a, k: np.mean(x, axis=a, keepdims=k, dtype=x.dtype),
             FLOAT_DTYPES, "Mean: the sum divided by the product of the reduced extents"),
    "max": (_extreme(np.max, _float_or_int_limit(-1)),
            NUMERIC_DTYPES, "Maximum (-inf over empty axes)"),
    "min": (_extreme(np.min, _float_or_int_limit(+1)),
            NUMERIC_DTYPES, "Minimum (+inf over empty axes)"),
    "prod": (lambda x, a, k: np.prod(x, axis=a, keepdims=k, dtype=x.dtype),
             NUMERIC_DTYPES, "Product (1 over empty axes)"),
}


def _reduce_op(kind: str) -> type[ReduceOp]:
    fn, dtypes, what = REDUCERS[kind]
    doc = (
        f"{what} of ``x`` over ``axes`` (any set, negative allowed).\n\n"
        "    Example::\n\n"
        f"        %s = rlx.reduce_{kind} %x {{axes = array<i64: 0, 2>, keep_dims = true}} "
        ": (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>\n"
    )
    return define_op(
        f"Reduce{kind.title()}Op", ReduceOp, f"rlx.reduce_{kind}", doc,
        REDUCER=staticmethod(fn), DTYPES=dtypes,
    )


REDUCE_OPS: dict[str, type[ReduceOp]] = {k: _reduce_op(k) for k in REDUCERS}
globals().update({cls.__name__: cls for cls in REDUCE_OPS.values()})
ReduceSumOp = REDUCE_OPS["sum"]
ReduceMeanOp = REDUCE_OPS["mean"]
ReduceMaxOp = REDUCE_OPS["max"]
ReduceMinOp = REDUCE_OPS["min"]
ReduceProdOp = REDUCE_OPS["prod"]


@INTERPRET.register(*REDUCE_OPS.values())
def _interpret_reduce(op: ReduceOp, x: np.ndarray) -> np.ndarray:
    keep = bool(op.attr("keep_dims", False))
    with np.errstate(all="ignore"):
        return type(op).REDUCER(x, op.reduced_axes(), keep)


# ---------------------------------------------------------------- cumsum


@irdl_op_definition
class CumsumOp(RlxOp):
    """Running sum along ``axis``: inclusive ``y_i = sum_{j<=i} x_j``; exclusive ``y_0 = 0``.

    Example::

        %y = rlx.cumsum %x {axis = -1 : i64, exclusive = true} : (tensor<2x5xf32>) -> tensor<2x5xf32>
    """

    name = "rlx.cumsum"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "axis": "i64, default -1 (any axis; negative counts from the end)",
        "exclusive": "BoolAttr, default false (true: y_i sums x_j for j < i, so y_0 = 0)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        expect_dtype(cls, types[0], NUMERIC_DTYPES)
        rank = len(shape_of(types[0]))
        if rank == 0:
            raise ShapeError(f"'{cls.name}' operand must have rank >= 1, got {types[0]}")
        norm_axes((optional(attrs, "axis", int, -1),), rank)
        optional(attrs, "exclusive", bool, False)
        return [types[0]]


def cumsum(x: np.ndarray, axis: int, exclusive: bool) -> np.ndarray:
    """``cumsum(np.array([1, 2, 3]), 0, True) -> [0, 1, 3]`` (exact shift, no subtraction)."""
    inclusive = np.cumsum(x, axis=axis, dtype=x.dtype)
    if not exclusive:
        return inclusive
    out = np.zeros_like(inclusive)
    dst = [slice(None)] * x.ndim
    src = [slice(None)] * x.ndim
    dst[axis], src[axis] = slice(1, None), slice(None, -1)
    out[tuple(dst)] = inclusive[tuple(src)]
    return out


@INTERPRET.register(CumsumOp)
def _interpret_cumsum(op: CumsumOp, x: np.ndarray) -> np.ndarray:
    axis = op.attr("axis", -1) % x.ndim
    return cumsum(x, axis, bool(op.attr("exclusive", False)))


# ---------------------------------------------------------------- VJP rules (SPEC 5.5, 5.6, 3.5)


@VJP.register(MatmulOp)
def _vjp_matmul(ctx: VjpContext, op: MatmulOp, g: Tensor) -> list[Tensor | None]:
    """``da = g @ b^T``, ``db = a^T @ g``, each summed back over broadcast batch dims."""
    a, b = ctx.inputs(op)
    return [ctx.unbroadcast(g @ b.T, a.shape), ctx.unbroadcast(a.T @ g, b.shape)]


def _reduce_parts(ctx: VjpContext, op: ReduceOp) -> tuple[Tensor, tuple[int, ...], bool]:
    (x,) = ctx.inputs(op)
    return x, op.reduced_axes(), bool(op.attr("keep_dims", False))


@VJP.register(ReduceSumOp)
def _vjp_reduce_sum(ctx: VjpContext, op: ReduceOp, g: Tensor) -> list[Tensor | None]:
    x, axes, keep = _reduce_parts(ctx, op)
    return [ctx.expand_to(g, x.shape, axes, keep)]


@VJP.register(ReduceMeanOp)
def _vjp_reduce_mean(ctx: VjpContext, op: ReduceOp, g: Tensor) -> list[Tensor | None]:
    """``g / count`` spread back; the scale is a constant of g's own dtype (SPEC 9.9)."""
    x, axes, keep = _reduce_parts(ctx, op)
    count = int(np.prod([x.shape[a] for a in axes]))
    return [ctx.expand_to(g * (1.0 / max(count, 1)), x.shape, axes, keep)]


@VJP.register(ReduceMaxOp, ReduceMinOp)
def _vjp_reduce_extreme(ctx: VjpContext, op: ReduceOp, g: Tensor) -> list[Tensor | None]:
    """Every element equal to the extreme gets the full ``g`` (ties not split, SPEC 5.6)."""
    x, axes, keep = _reduce_parts(ctx, op)
    (y,) = ctx.outputs(op)
    kept = [1 if i in axes else d for i, d in enumerate(x.shape)]
    y_kept, g_kept = (t if keep else ctx.b.reshape(t, kept) for t in (y, g))
    hit = ctx.b.compare(x, y_kept, predicate="eq")
    return [ctx.b.where(hit, ctx.b.expand(g_kept, x.shape), ctx.zeros((), g.dtype))]


@VJP.register(ReduceProdOp)
def _vjp_reduce_prod(ctx: VjpContext, op: ReduceOp, g: Tensor) -> list[Tensor | None]:
    """``g * y / x`` spread back (SPEC 5.6: not defined where x is 0)."""
    x, axes, keep = _reduce_parts(ctx, op)
    (y,) = ctx.outputs(op)
    gy = g * y
    return [ctx.expand_to(gy, x.shape, axes, keep) / x]


@VJP.register(CumsumOp)
def _vjp_cumsum(ctx: VjpContext, op: CumsumOp, g: Tensor) -> list[Tensor | None]:
    """Reverse running sum (SPEC 3.5): ``sum(g) - cumsum(g)`` with the other inclusivity.

    Inclusive: ``dx_i = sum_{j>=i} g_j = total - exclusive_cumsum(g)_i``;
    exclusive: ``dx_i = sum_{j>i} g_j = total - inclusive_cumsum(g)_i``.
    """
    axis = op.attr("axis", -1) % g.ndim
    exclusive = bool(op.attr("exclusive", False))
    total = ctx.b.reduce_sum(g, axes=[axis], keep_dims=True)
    return [total - ctx.b.cumsum(g, axis=axis, exclusive=not exclusive)]


OPS = [MatmulOp, *REDUCE_OPS.values(), CumsumOp]
