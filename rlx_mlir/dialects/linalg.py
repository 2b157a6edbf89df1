"""Linear-algebra family: matmul, the reductions and cumsum (SPEC 2.1.7, 2.1.8, 2.2.3).

Matmul broadcasts its batch dims; reductions take any set of axes::

    %y = rlx.matmul %a, %w : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
    %s = rlx.reduce_sum %x {axes = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
    %c = rlx.cumsum %x {axis = 0 : i64, exclusive = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, f32, f64
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    COMPLEX_DTYPES,
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
        expect_dtype(cls, types[0], (*NUMERIC_DTYPES, *COMPLEX_DTYPES))
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
            raise ShapeError(f"{what} must have rank >= 2, got {t}")
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
            (*NUMERIC_DTYPES, *COMPLEX_DTYPES), "Sum (0 over empty axes)"),
    "mean": (lambda x, a, k: np.mean(x, axis=a, keepdims=k, dtype=x.dtype),
             (*FLOAT_DTYPES, *COMPLEX_DTYPES), "Mean: the sum divided by the product of the reduced extents"),
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
        expect_dtype(cls, types[0], (*NUMERIC_DTYPES, *COMPLEX_DTYPES))
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


for _accumulating in (ReduceSumOp, ReduceProdOp, CumsumOp):
    _accumulating.ACCUMULATES = True


@INTERPRET.register(CumsumOp)
def _interpret_cumsum(op: CumsumOp, x: np.ndarray) -> np.ndarray:
    axis = op.attr("axis", -1) % x.ndim
    return cumsum(x, axis, bool(op.attr("exclusive", False)))


# ---------------------------------------------------------------- VJP rules (SPEC 5.5, 5.6, 3.5)


@VJP.register(MatmulOp)
def _vjp_matmul(ctx: VjpContext, op: MatmulOp, g: Tensor) -> list[Tensor | None]:
    """``da = g @ b^T``, ``db = a^T @ g``, each summed back over broadcast batch dims
    (complex: the conjugate transposes, SPEC 5.9). A shared 2-D ``b`` (``[B, S, K] @
    [K, N]``) gets ``db`` as one matmul over the folded rows, ``[K, B*S] @ [B*S, N]``,
    instead of B matmuls and a sum."""
    a, b = ctx.inputs(op)
    a, b = a.conj(), b.conj()  # real operands as they are
    da = ctx.unbroadcast(g @ b.mT, a.shape)
    if b.ndim == 2 and a.ndim > 2:
        rows = ctx.b.reshape(a, (-1, a.shape[-1]))
        return [da, rows.mT @ ctx.b.reshape(g, (-1, g.shape[-1]))]
    return [da, ctx.unbroadcast(a.mT @ g, b.shape)]


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
    """``g`` split evenly among the elements equal to the extreme: the transpose of the
    JVP (the mean of the tied tangents), as in JAX and torch's ``amax``. RLX gave every
    tied element the full ``g`` (SPEC 9.27 allows changing that consistently), so
    ``jacrev`` and ``jacfwd`` disagreed at ties and the gradient mass was k g."""
    x, axes, keep = _reduce_parts(ctx, op)
    (y,) = ctx.outputs(op)
    kept = [1 if i in axes else d for i, d in enumerate(x.shape)]
    y_kept, g_kept = (t if keep else ctx.b.reshape(t, kept) for t in (y, g))
    hit = ctx.b.compare(x, y_kept, predicate="eq")
    zero, one = ctx.zeros((), g.dtype), ctx.b.full((), 1.0, g.dtype)
    count = ctx.b.reduce_sum(ctx.b.where(hit, one, zero), axes=list(axes), keep_dims=True)
    share = g_kept / ctx.b.max(count, one)
    return [ctx.b.where(hit, ctx.b.expand(share, x.shape), zero)]


def product_of_others(b: Any, x: Tensor, axes: Sequence[int]) -> Tensor:
    """At each element of ``x``, the product over ``axes`` of the other elements: the
    derivative of ``prod``, finite where ``x`` has zeros (SPEC 5.6's ``y / x`` is NaN
    there; JAX and torch are finite). Built from the product of the nonzero elements and
    the zero-valued ones themselves (0, but with the right derivative), so its own
    derivative, the Hessian of ``prod``, is right too with up to two zeros in a reduction
    (and three or more, where it is 0). Complex ``x`` keeps ``y / x``.

    >>> product_of_others(b, x, [1])   # doctest: +SKIP
    """
    def over_axes(reduce: Callable[..., Tensor], v: Tensor) -> Tensor:
        return b.expand(reduce(v, axes=list(axes), keep_dims=True), x.shape)

    if x.dtype.startswith("c"):
        return over_axes(b.reduce_prod, x) / x
    zero, one, two = (b.full(x.shape, v, x.dtype) for v in (0.0, 1.0, 2.0))
    is_zero = b.compare(x, zero, predicate="eq")
    nonzero = b.where(is_zero, one, x)
    product = over_axes(b.reduce_prod, nonzero)
    zeros = over_axes(b.reduce_sum, b.where(is_zero, one, zero))
    # at a zero: the other zeros' product: 1 (none), the other one's value (one), 0
    other_zero = b.where(b.compare(zeros, one, predicate="eq"), one,
                         b.where(b.compare(zeros, two, predicate="eq"),
                                 over_axes(b.reduce_sum, b.where(is_zero, x, zero)) - x, zero))
    at_nonzero = product / nonzero * over_axes(b.reduce_prod, b.where(is_zero, x, one))
    return b.where(is_zero, product * other_zero, at_nonzero)


@VJP.register(ReduceProdOp)
def _vjp_reduce_prod(ctx: VjpContext, op: ReduceOp, g: Tensor) -> list[Tensor | None]:
    """``g`` spread back times the product of the other elements (finite at zeros)."""
    x, axes, keep = _reduce_parts(ctx, op)
    return [ctx.expand_to(g, x.shape, axes, keep) * product_of_others(ctx.b, x, axes)]


@VJP.register(CumsumOp)
def _vjp_cumsum(ctx: VjpContext, op: CumsumOp, g: Tensor) -> list[Tensor | None]:
    """``rlx.cumsum_backward`` (SPEC 3.5): a reverse running sum of ``g``, O(n) and exact.

    Inclusive: ``dx_i = sum_{j>=i} g_j``; exclusive: ``dx_i = sum_{j>i} g_j``.
    """
    (x,) = ctx.inputs(op)
    return [ctx.b.emit("cumsum_backward", g, axis=op.attr("axis", -1) % g.ndim,
                       exclusive=bool(op.attr("exclusive", False)) or None, out=[x.type])]


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# reduce_sum, reduce_mean and cumsum are linear; matmul is bilinear; max/min take the
# tangent at the extreme; prod is ``y * sum(t / x)``.

from rlx_mlir.dialects.shape import linear  # noqa: E402
from rlx_mlir.rules import JVP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext

JVP.register(ReduceSumOp, ReduceMeanOp, CumsumOp)(linear)


@JVP.register(MatmulOp)
def _jvp_matmul(ctx: JvpContext, op: MatmulOp, ta: Tensor | None,
                tb: Tensor | None) -> list[Tensor | None]:
    """``ta @ b + a @ tb``: each term already has the result's broadcast batch shape."""
    a, b = ctx.inputs(op)
    return [ctx.add(None if ta is None else ta @ b, None if tb is None else a @ tb)]


def _reduce_sum_like(ctx: JvpContext, op: ReduceOp, x: Tensor) -> Tensor:
    """``x`` summed over ``op``'s axes with its keep_dims: a tensor of op's result shape."""
    return ctx.b.reduce_sum(x, axes=list(op.reduced_axes()),
                            keep_dims=bool(op.attr("keep_dims", False)) or None)


@JVP.register(ReduceMaxOp, ReduceMinOp)
def _jvp_reduce_extreme(ctx: JvpContext, op: ReduceOp, t: Tensor) -> list[Tensor | None]:
    """The mean of ``t`` over the elements equal to the extreme. With a unique extreme
    (almost everywhere) that is the derivative; at a tie, where max is not differentiable,
    it is the average of the tied tangents (JAX's rule; the VJP is its transpose). An
    empty or all-NaN reduction gets tangent 0."""
    x, axes, keep = _reduce_parts(ctx, op)
    (y,) = ctx.outputs(op)
    kept = [1 if i in axes else d for i, d in enumerate(x.shape)]
    hit = ctx.b.compare(x, y if keep else ctx.b.reshape(y, kept), predicate="eq")
    zero, one = ctx.zeros((), t.dtype), ctx.b.full((), 1.0, t.dtype)
    count = _reduce_sum_like(ctx, op, ctx.b.where(hit, one, zero))
    total = _reduce_sum_like(ctx, op, ctx.b.where(hit, t, zero))
    return [total / ctx.b.max(count, one)]


@JVP.register(ReduceProdOp)
def _jvp_reduce_prod(ctx: JvpContext, op: ReduceOp, t: Tensor) -> list[Tensor | None]:
    """``sum(t * product of the others)`` (:func:`product_of_others`: finite at zeros)."""
    (x,) = ctx.inputs(op)
    return [_reduce_sum_like(ctx, op, t * product_of_others(ctx.b, x, op.reduced_axes()))]


# ---------------------------------------------------------------- batching rules (SPEC 6.2)
# matmul broadcasts its batch dims: a batched operand is padded with 1s after its B axis
# to the result's rank (ctx.elementwise), so B lines up and a shared operand is never
# copied. Axis attributes are normalised before the shift (SPEC 9.8).

VMAP.register(MatmulOp)(lambda ctx, op, xs, batched: ctx.elementwise(op, xs, batched))


@VMAP.register(*REDUCE_OPS.values())
def _vmap_reduce(ctx: VmapContext, op: ReduceOp, xs, batched) -> list[Tensor]:
    return ctx.emit_like(op, xs, axes=[a + 1 for a in op.reduced_axes()])


@VMAP.register(CumsumOp)
def _vmap_cumsum(ctx: VmapContext, op: CumsumOp, xs, batched) -> list[Tensor]:
    return ctx.emit_like(op, xs, axis=ctx.shift_axis(op.attr("axis", -1), xs[0].ndim - 1))


OPS = [MatmulOp, *REDUCE_OPS.values(), CumsumOp]


# ---------------------------------------------------------------- LOWER rules
# ``rule(op, e, *operands) -> value``: ``e`` is a rlx_mlir.lowering.Emitter inserting
# before ``op`` (docs/lowering.md). Contractions stay linalg.matmul / batch_matmul or a
# generic contraction; reductions are linalg.reduce; running sums are an scf.for over
# the axis whose step adds one slice (O(n), vectorizable across the other dims).


from xdsl.dialects import arith, scf  # noqa: E402
from xdsl.dialects import tensor as tensor_dialect  # noqa: E402
from xdsl.dialects.builtin import (  # noqa: E402
    DYNAMIC_INDEX,
    ArrayAttr,
    ComplexType,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    i64,
)
from xdsl.ir.affine import AffineExpr, AffineMap  # noqa: E402

from rlx_mlir.dialects.base import numpy_dtype  # noqa: E402
from rlx_mlir.rules import LOWER  # noqa: E402


def _numel(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64))


def _contraction_maps(a: Sequence[int], b: Sequence[int], out: Sequence[int]) -> list[AffineMap]:
    """Maps over ``(batch..., m, n, k)``; a size-1 (or missing) batch dim is not iterated."""
    nb = len(out) - 2
    m, n, k = (AffineExpr.dimension(nb + i) for i in range(3))

    def batch(shape: Sequence[int]) -> list[AffineExpr]:
        lead = nb - (len(shape) - 2)
        return [AffineExpr.constant(0) if d == 1 and out[lead + i] != 1
                else AffineExpr.dimension(lead + i) for i, d in enumerate(shape[:-2])]

    dims = [AffineExpr.dimension(i) for i in range(nb)]
    return [AffineMap(nb + 3, 0, (*batch(a), m, k)), AffineMap(nb + 3, 0, (*batch(b), k, n)),
            AffineMap(nb + 3, 0, (*dims, m, n))]


def _generic_contraction(e: Any, a: Any, b: Any, out: Sequence[int]) -> Any:
    """``C[batch, m, n] += A[bcast(batch), m, k] * B[bcast(batch), k, n]``, no copies."""
    acc = e.fill(0, out, a.type.element_type)
    maps = _contraction_maps(shape_of(a.type), shape_of(b.type), out)
    iterators = ["parallel"] * (len(out)) + ["reduction"]
    return e.generic([a, b], [acc], maps, iterators,
                     lambda s, x, y, c: s.add(s.mul(x, y), c))


def _wide_contraction(e: Any, a: Any, b: Any, out: Sequence[int]) -> Any:
    """:func:`_generic_contraction` with f32 products summed in f64, rounded once."""
    acc = e.fill(0, out, f64)
    maps = _contraction_maps(shape_of(a.type), shape_of(b.type), out)
    wide = e.generic([a, b], [acc], maps, ["parallel"] * len(out) + ["reduction"],
                     lambda s, x, y, c: s.add(c, s.cast(s.mul(x, y), f64)))
    return e.elementwise([wide], f32, lambda s, v: s.cast(v, f32))


def _leading_groups(rank: int, n: int) -> ArrayAttr:
    """Reassociation ``[[0 .. n-1], [n], [n+1], ...]``: the first ``n`` dims are one group."""
    groups = [list(range(n))] + [[i] for i in range(n, rank)]
    return ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])


def fold_leading(e: Any, x: Any, n: int) -> Any:
    """Collapse the first ``n`` dims of ``x`` into one (a ``tensor.collapse_shape`` view)."""
    shape = shape_of(x.type)
    if n == 1:
        return x
    folded = TensorType(x.type.element_type, [_numel(shape[:n]), *shape[n:]])
    return e.emit(tensor_dialect.CollapseShapeOp.create(
        operands=[x], result_types=[folded],
        properties={"reassociation": _leading_groups(len(shape), n)}))


def unfold_leading(e: Any, x: Any, shape: Sequence[int]) -> Any:
    """Split the first dim of ``x`` back into the leading dims of ``shape`` (expand_shape)."""
    n = len(shape) - len(shape_of(x.type)) + 1
    if n == 1:
        return x
    return e.emit(tensor_dialect.ExpandShapeOp.create(
        operands=[x], result_types=[TensorType(x.type.element_type, list(shape))],
        properties={"reassociation": _leading_groups(len(shape), n),
                    "static_output_shape": DenseArrayBase.from_list(i64, list(shape))}))


@LOWER.register(MatmulOp)
def _lower_matmul(op: MatmulOp, e: Any, a: Any, b: Any) -> Any:
    """2-D: linalg.matmul. A shared rhs ([B, S, K] @ [K, N]): the lhs batch folds into rows
    of one linalg.matmul. Equal batches: linalg.batch_matmul on the folded batch. Other
    broadcasts: a linalg.generic contraction whose maps broadcast the batch (no copies).
    Folding is ``collapse_shape`` / ``expand_shape`` only (views after bufferization)."""
    out = shape_of(op.result.type)
    if isinstance(a.type.element_type, ComplexType):
        return _complex_product(e, a, b, out)
    return _real_product(e, a, b, out)


def _complex_product(e: Any, a: Any, b: Any, out: Sequence[int]) -> Any:
    """Four real products of the parts, ``(ar br - ai bi) + i (ar bi + ai br)``, each
    scheduled as a real matmul: a complex contraction is scalar code (no vector of
    ``complex<f32>``), 512x512 c64 took 0.40 s against JAX's 0.034."""
    part = a.type.element_type.element_type  # type: ignore[attr-defined]
    ar, ai, br, bi = (e.elementwise([x], part, lambda s, v, name=name: getattr(s, name)(v))
                      for x in (a, b) for name in ("real", "imag"))
    rr, ii, ri, ir = (_real_product(e, x, y, out)
                      for x, y in ((ar, br), (ai, bi), (ar, bi), (ai, br)))
    return e.elementwise([rr, ii, ri, ir], a.type.element_type,
                         lambda s, rr, ii, ri, ir: s.make_complex(s.sub(rr, ii), s.add(ri, ir)))


WIDE_DOT_MAX_OUTPUTS = 16
"""An f32 product of at most this many outputs, one column ``[K, 1]`` on the right and
``K >= WIDE_SUM_COUNT`` (a dot product, a few rows times a vector) accumulates in f64 as
the wide sums do, reading both operands along ``K``: a running f32 dot of 2M elements was
off by 5e-4 (``(a * b).sum()`` by 2e-8) and took 3.5 ms, now 0.27. A right operand of
several columns stays a matmul (read down its columns, the sum took 19 ms for ``1x1Mx8``)."""


def _real_product(e: Any, a: Any, b: Any, out: Sequence[int]) -> Any:
    sa, sb = shape_of(a.type), shape_of(b.type)
    if a.type.element_type == f32 and sa[-1] >= WIDE_SUM_COUNT and sb[-1] == 1 \
            and _numel(out) <= WIDE_DOT_MAX_OUTPUTS:
        return _wide_contraction(e, a, b, out)
    if len(sa) == len(sb) == 2:
        return e.matmul(a, b)
    if _numel(sb[:-2]) == 1:
        rows = e.matmul(fold_leading(e, a, len(sa) - 1), fold_leading(e, b, len(sb) - 1))
        return unfold_leading(e, rows, out)
    if _numel(sa[:-2]) == _numel(sb[:-2]) == _numel(out[:-2]):
        y = e.batch_matmul(fold_leading(e, a, len(sa) - 2), fold_leading(e, b, len(sb) - 2))
        return unfold_leading(e, y, out)
    return _generic_contraction(e, a, b, out)


def _extreme_init(sign: int) -> Callable[[Any], float | int]:
    """The identity of max (sign -1) / min (sign +1): -inf / +inf or the int limits."""
    return lambda etype: _float_or_int_limit(sign)(numpy_dtype(TensorType(etype, [])))


_REDUCE_LOWERINGS: dict[str, tuple[Callable[[Any], float | int], Callable[..., Any]]] = {
    "sum": (lambda t: 0, lambda s, v, acc: s.add(v, acc)),
    "mean": (lambda t: 0, lambda s, v, acc: s.add(v, acc)),
    "prod": (lambda t: 1, lambda s, v, acc: s.mul(v, acc)),
    "max": (_extreme_init(-1), lambda s, v, acc: s.max(v, acc)),
    "min": (_extreme_init(+1), lambda s, v, acc: s.min(v, acc)),
}


@LOWER.register(*REDUCE_OPS.values())
def _lower_reduce(op: ReduceOp, e: Any, x: Any) -> Any:
    """linalg.reduce from the identity (max/min: -inf/+inf or the int limits); mean
    divides the sum by the reduced count, a constant of the op's dtype."""
    kind = op.name.removeprefix("rlx.reduce_")
    init, body = _REDUCE_LOWERINGS[kind]
    axes, etype = op.reduced_axes(), x.type.element_type
    keep = bool(op.attr("keep_dims", False))
    count = _numel([shape_of(x.type)[a] for a in axes])
    if kind in ("sum", "mean") and etype in (f32, C64) and count >= WIDE_SUM_COUNT:
        wide, widen, narrow = _WIDE_SUMS[etype]
        y = e.reduce(x, axes, 0, lambda s, v, acc: s.add(widen(s, v), acc),
                     keep_dims=keep, acc_type=wide)
        return e.elementwise([y], etype, lambda s, v: narrow(
            s, v if kind == "sum" else s.div(v, float(count))))
    y = e.reduce(x, axes, init(etype), body, keep_dims=keep)
    if kind != "mean":
        return y
    return e.elementwise([y], etype, lambda s, v: s.div(v, float(count)))


WIDE_SUM_COUNT = 1 << 14
"""An f32 (c64) sum or mean over at least this many elements accumulates in f64 (c128):
numpy's pairwise sum and XLA stay near f32 rounding; a running f32 sum of 10^7 elements is
off by ~1e-3 (c64 over 4e6: 2.6e-5 against numpy's 2.7e-8)."""

C64, C128 = ComplexType(f32), ComplexType(f64)


def _complex_resize(part: Any) -> Callable[[Any, Any], Any]:
    return lambda s, v: s.make_complex(s.cast(s.real(v), part), s.cast(s.imag(v), part))


_WIDE_SUMS: dict[Any, tuple[Any, Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    f32: (f64, lambda s, v: s.cast(v, f64), lambda s, v: s.cast(v, f32)),
    C64: (C128, _complex_resize(f64), _complex_resize(f32)),
}
"""Element type -> (accumulator type, widen, narrow) of the wide sums."""


# -- scf helpers shared with the indexing backward ops (backward/indexing.py)


def index_constant(e: Any, value: int) -> Any:
    """``arith.constant value : index``."""
    return e.emit(arith.ConstantOp(IntegerAttr(value, IndexType())))


def slice_at(e: Any, x: Any, axis: int, pos: Any) -> Any:
    """``x[.., pos:pos+1, ..]`` (rank kept) at a dynamic ``index`` position along ``axis``."""
    shape = list(shape_of(x.type))
    offsets: list[Any] = [0] * len(shape)
    offsets[axis], shape[axis] = pos, 1
    result = TensorType(x.type.element_type, shape)
    return e.emit(tensor_dialect.ExtractSliceOp(x, offsets, shape, [1] * len(shape), result))


def insert_at(e: Any, part: Any, into: Any, axis: int, pos: Any) -> Any:
    """``into`` with the one-thick slice ``part`` written at ``pos`` along ``axis``."""
    sizes = list(shape_of(part.type))
    offsets = [0] * len(sizes)
    offsets[axis] = DYNAMIC_INDEX
    return e.emit(tensor_dialect.InsertSliceOp.get(part, into, sizes, offsets, offsets=[pos]))


def accumulate(e: Any, part: Any, acc: Any) -> Any:
    """``acc + part`` elementwise, written into ``acc`` (in place after bufferization)."""
    ident = AffineMap.identity(len(shape_of(acc.type)))
    return e.generic([part], [acc], [ident, ident], ["parallel"] * len(shape_of(acc.type)),
                     lambda s, v, a: s.add(a, v))


def for_loop(e: Any, count: int, inits: Sequence[Any], body: Callable[..., list[Any]]) -> Any:
    """``scf.for %i = 0 to count`` carrying ``inits``; ``body(s, i, *carried)`` -> next."""
    lower, upper, step = (index_constant(e, v) for v in (0, count, 1))
    region = e.region([IndexType(), *(v.type for v in inits)], body, yield_op=scf.YieldOp)
    loop = scf.ForOp(lower, upper, step, list(inits), region)
    e.emit(loop)
    return loop.results


def lower_running_sum(e: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    """Running sum of ``x`` along ``axis`` (from the end when ``reverse``), in order, one
    add per element: the step at position p writes ``acc + x[p]`` (inclusive) or ``acc``
    (exclusive, written before the add) into the result."""
    shape, etype = shape_of(x.type), x.type.element_type
    rank = len(shape)
    if axis == rank - 1 and rank > 1 and math.prod(shape[:-1]) > 1:
        # along the innermost axis each step would read a strided column: run along the
        # leading axis of the transpose instead, whole rows per step ([1024, 1024]: 13.5
        # -> 0.9 ms, numpy 3.0)
        to_front = [rank - 1, *range(rank - 1)]
        summed = lower_running_sum(e, e.transpose(x, to_front), 0, exclusive, reverse)
        return e.transpose(summed, [*range(1, rank), 0])
    length = shape[axis]
    step_shape = [1 if i == axis else d for i, d in enumerate(shape)]

    def step(s: Any, i: Any, out: Any, acc: Any) -> list[Any]:
        pos = s.emit(arith.SubiOp(index_constant(s, length - 1), i)) if reverse else i
        if exclusive:
            out = insert_at(s, acc, out, axis, pos)
        total = accumulate(s, slice_at(s, x, axis, pos), acc)
        if not exclusive:
            out = insert_at(s, total, out, axis, pos)
        return [out, total]

    inits = [e.empty(shape, etype), e.fill(0, step_shape, etype)]
    return for_loop(e, length, inits, step)[0]


@LOWER.register(CumsumOp)
def _lower_cumsum(op: CumsumOp, e: Any, x: Any) -> Any:
    axis = op.attr("axis", -1) % len(shape_of(x.type))
    return lower_running_sum(e, x, axis, bool(op.attr("exclusive", False)), reverse=False)
