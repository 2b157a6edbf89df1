"""Solve family: dense linear solves ``A X = B``, single and batched (SPEC 2.2.1, 2.2.2).

``B`` is one right-hand side (rank-1 per slice) or ``K`` of them (rank-2 per slice); ``X``
has the shape of ``B``::

    %x = rlx.dense_solve %a, %b : (tensor<3x3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %y = rlx.batched_dense_solve %p, %q : (tensor<4x3x3xf32>, tensor<4x3x2xf32>) -> tensor<4x3x2xf32>

**Singular matrices** (SPEC 9.25): a slice whose LU factorisation with partial pivoting
meets an exactly zero pivot column gives a result that is NaN everywhere (other batch
slices are unaffected); nothing aborts or raises. The interpreter (LAPACK ``gesv`` via
``numpy.linalg.solve``, NaN when it reports singularity) and the JIT (the same LU, own
loops) agree on this. Nearly singular matrices give huge or non-finite values that the
two need not agree on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects import arith, scf
from xdsl.dialects import tensor as tensor_d
from xdsl.dialects.builtin import ComplexType, IndexType, IntegerAttr, TensorType, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    COMPLEX_DTYPES,
    FLOAT_DTYPES,
    RlxOp,
    ShapeError,
    expect_rank,
    expect_same_dtype,
    fmt_shape,
    shape_of,
)
from rlx_mlir.rules import INTERPRET, JVP, LOWER, VJP, VMAP

if TYPE_CHECKING:
    from rlx_mlir.builder import Builder, Tensor
    from rlx_mlir.lowering.emitter import Emitter
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext

# ---------------------------------------------------------------- ops


class SolveOp(RlxOp):
    """``A X = B`` with ``BATCH`` leading batch dims shared by A, B and X."""

    a = operand_def(TensorType)
    b = operand_def(TensorType)
    result = result_def(TensorType)
    BATCH: ClassVar[int] = 0
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_same_dtype(types, f"'{cls.name}' operands")
        if dtype not in (*FLOAT_DTYPES, *COMPLEX_DTYPES):
            raise ShapeError(f"'{cls.name}' operands must be f32, f64, c64 or c128, got {dtype}")
        lead = cls.BATCH
        a = expect_rank(types[0], [lead + 2], f"'{cls.name}' A")
        b = expect_rank(types[1], [lead + 1, lead + 2], f"'{cls.name}' B")
        if a[-1] != a[-2]:
            raise ShapeError(f"A must be square, got {fmt_shape(a)}")
        if a[:lead] != b[:lead]:
            raise ShapeError(f"batch dims differ: A is {fmt_shape(a)}, B is {fmt_shape(b)}")
        if b[lead] != a[-1]:
            raise ShapeError(f"B has {b[lead]} rows but A is {fmt_shape(a)} (need {a[-1]})")
        return [types[1]]


@irdl_op_definition
class DenseSolveOp(SolveOp):
    """``X = solve(A, B)``: ``A [N, N]``, ``B [N]`` or ``[N, K]``, X shaped like B.

    An A whose elimination meets an all-zero pivot column gives an all-NaN X (a tiny
    pivot left by rounding gives huge values, as LAPACK's getrs).

    Example::

        %x = rlx.dense_solve %a, %b : (tensor<2x2xf64>, tensor<2xf64>) -> tensor<2xf64>
    """

    name = "rlx.dense_solve"


@irdl_op_definition
class BatchedDenseSolveOp(SolveOp):
    """Independent solves per batch slice: ``A [Bt, N, N]``, ``B [Bt, N]`` or ``[Bt, N, K]``.

    A slice whose elimination meets an all-zero pivot column gives NaN in that slice only.

    Example::

        %x = rlx.batched_dense_solve %a, %b : (tensor<4x2x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
    """

    name = "rlx.batched_dense_solve"
    BATCH: ClassVar[int] = 1


# ---------------------------------------------------------------- interpreter


def solve_or_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``x`` with ``a @ x = b`` (a rank-1 (per slice) ``b`` is one column), by the compiled
    kernel's own LU, operation for operation, so the interpreter and native code agree:
    partial pivoting on the first largest ``|a[i, k]|`` (``|re| + |im|`` for complex),
    multipliers ``a[i, k] / a[k, k]``, then back substitution summing left to right. A
    slice whose elimination meets an all-zero pivot column gives NaN; rounding can leave a
    tiny pivot in a matrix singular in exact arithmetic instead, which (as with LAPACK's
    ``getrs``) gives huge values.

    >>> solve_or_nan(np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([5.0, 10.0]))
    array([1., 3.])
    >>> solve_or_nan(np.ones((2, 2)), np.ones(2))
    array([nan, nan])
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _lu_solve(a, b)


def _lu_solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    vector = b.ndim == a.ndim - 1
    n = a.shape[-1]
    u = np.array(a, copy=True)
    x = np.array(b[..., None] if vector else b, copy=True)
    singular = np.zeros(a.shape[:-2], bool)
    for k in range(n):
        size = np.abs(u[..., k:, k].real) + np.abs(u[..., k:, k].imag) \
            if np.iscomplexobj(u) else np.abs(u[..., k:, k])
        p = k + np.argmax(size, axis=-1)[..., None, None]
        singular |= size.max(axis=-1, initial=0) == 0
        _swap_rows(u, k, p)
        _swap_rows(x, k, p)
        factor = u[..., k + 1:, k:k + 1] / u[..., k:k + 1, k:k + 1]
        u[..., k + 1:, k + 1:] -= factor * u[..., k:k + 1, k + 1:]
        x[..., k + 1:, :] -= factor * x[..., k:k + 1, :]
    for i in range(n - 1, -1, -1):
        terms = u[..., i, i + 1:, None] * x[..., i + 1:, :]
        rest = np.cumsum(terms, axis=-2)[..., -1, :] if i < n - 1 else 0.0
        x[..., i, :] = (x[..., i, :] - rest) / u[..., i, i, None]
    x[singular] = np.nan
    return x[..., 0] if vector else x


def _swap_rows(t: np.ndarray, k: int, p: np.ndarray) -> None:
    """Rows ``k`` and ``p`` (per slice) of ``t [..., N, K]`` exchanged in place."""
    rows = np.take_along_axis(t, np.broadcast_to(p, (*t.shape[:-2], 1, t.shape[-1])), -2)
    np.put_along_axis(t, np.broadcast_to(p, rows.shape), t[..., k:k + 1, :].copy(), -2)
    t[..., k:k + 1, :] = rows


@INTERPRET.register(DenseSolveOp, BatchedDenseSolveOp)
def _interpret_solve(op: SolveOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return solve_or_nan(a, b)


# ---------------------------------------------------------------- VJP (SPEC 5.5)


@VJP.register(DenseSolveOp, BatchedDenseSolveOp)
def _vjp_solve(ctx: VjpContext, op: SolveOp, g: Tensor) -> list[Tensor | None]:
    """Implicit function rule: ``dB = solve(Aᴴ, g)``, ``dA = -dB Xᴴ`` (per batch slice; the
    conjugate transposes are plain ones for real operands, SPEC 5.9)."""
    a, _ = ctx.inputs(op)
    (x,) = ctx.outputs(op)
    lead = type(op).BATCH
    swap_last = [*range(lead), lead + 1, lead]
    db = ctx.b.emit(op.name, ctx.b.transpose(a.conj(), perm=swap_last), g)
    da = -ctx.b.matmul(*_outer_factors(ctx, db, x.conj(), lead, swap_last))
    return [da, db]


def _outer_factors(ctx: VjpContext, db: Tensor, x: Tensor, lead: int,
                   swap_last: list[int]) -> tuple[Tensor, Tensor]:
    """``(dB, Xᵀ)`` as matmul operands: a rank-1 right-hand side becomes ``[N, 1] x [1, N]``."""
    if db.ndim == lead + 2:
        return db, ctx.b.transpose(x, perm=swap_last)
    *batch, n = db.shape
    return ctx.b.reshape(db, (*batch, n, 1)), ctx.b.reshape(x, (*batch, 1, n))


# ---------------------------------------------------------------- JVP (SPEC 4.6)


@JVP.register(DenseSolveOp, BatchedDenseSolveOp)
def _jvp_solve(ctx: JvpContext, op: SolveOp, ta: Tensor | None,
               tb: Tensor | None) -> list[Tensor | None]:
    """``t_X = solve(A, t_B - t_A X)``: one solve with the primal A."""
    a, _ = ctx.inputs(op)
    (x,) = ctx.outputs(op)
    ta_x = None if ta is None else _apply(ctx.b, ta, x, type(op).BATCH)
    rhs = ctx.add(tb, None if ta_x is None else -ta_x)
    return [ctx.b.emit(op.name, a, rhs)]


def _apply(b: Builder, m: Tensor, x: Tensor, lead: int) -> Tensor:
    """``m @ x`` per slice, ``x`` one column (rank ``lead + 1``) or several."""
    if x.ndim == lead + 2:
        return b.matmul(m, x)
    return b.reshape(b.matmul(m, b.reshape(x, (*x.shape, 1))), x.shape)


# ---------------------------------------------------------------- VMAP (SPEC 6.2)


@VMAP.register(DenseSolveOp)
def _vmap_dense_solve(ctx: VmapContext, op: SolveOp, xs: list[Tensor],
                      batched: list[bool]) -> list[Tensor]:
    """A shared A with one right-hand side per element: one solve with the batch as the
    columns; otherwise one batched solve."""
    (a, rhs), (a_batched, _) = xs, batched
    if not a_batched and rhs.ndim == 2:
        return [ctx.b.transpose(ctx.b.dense_solve(a, ctx.b.transpose(rhs, perm=[1, 0])),
                                perm=[1, 0])]
    return [ctx.b.batched_dense_solve(*ctx.lift_all(xs, batched))]


@VMAP.register(BatchedDenseSolveOp)
def _vmap_batched_dense_solve(ctx: VmapContext, op: SolveOp, xs: list[Tensor],
                              batched: list[bool]) -> list[Tensor]:
    """The vmap axis folded into the op's own batch axis."""
    a, rhs = (ctx.fold(v) for v in ctx.lift_all(xs, batched))
    return [ctx.unfold(ctx.b.batched_dense_solve(a, rhs))]


OPS = [DenseSolveOp, BatchedDenseSolveOp]


# ---------------------------------------------------------------- LOWER
# LU with partial pivoting (first largest |pivot|, like LAPACK's getrf) applied to the
# right-hand sides as it goes, then back substitution, as scf.for loops over tensors
# (one-shot-bufferize makes the inserts in place). Batched: one more loop over slices.

Index = SSAValue | int


def _index(e: Emitter, v: Index) -> SSAValue:
    if isinstance(v, SSAValue):
        return v
    return e.emit(arith.ConstantOp(IntegerAttr(v, IndexType())))


def _iadd(e: Emitter, a: Index, b: Index) -> SSAValue:
    return e.emit(arith.AddiOp(_index(e, a), _index(e, b)))


def _isub(e: Emitter, a: Index, b: Index) -> SSAValue:
    return e.emit(arith.SubiOp(_index(e, a), _index(e, b)))


def _for(e: Emitter, lb: Index, ub: Index, inits: Sequence[SSAValue],
         body: Callable[..., Sequence[SSAValue]]) -> list[SSAValue]:
    """``scf.for i = lb to ub`` carrying ``inits``; ``body(s, i, *carried)`` -> new carried.

    >>> # total, = _for(e, 0, n, [zero], lambda s, i, acc: [s.add(acc, x_at(s, i))])
    """
    types = [IndexType(), *(v.type for v in inits)]
    region = e.region(types, lambda s, *args: list(body(s, *args)), yield_op=scf.YieldOp)
    op = scf.ForOp(_index(e, lb), _index(e, ub), _index(e, 1), list(inits), region)
    e.emit(op)
    return list(op.results)


def _magnitude(s: Emitter, v: SSAValue) -> SSAValue:
    """The pivot size: ``|v|``, or ``|re| + |im|`` for a complex ``v`` (LAPACK's ``cabs1``,
    which ``zgetrf`` pivots by)."""
    if not isinstance(v.type, ComplexType):
        return s.abs(v)
    return s.add(s.abs(s.real(v)), s.abs(s.imag(v)))


@dataclass(frozen=True)
class _LuKernel:
    """Emits one slice's solve on whole tensors: indices are ``pre + [i, j]``.

    ``vector``: the right-hand side has no column dim (``K == 1``, ``j`` unused).
    """

    etype: Attribute
    n: int
    k: int
    vector: bool

    @staticmethod
    def of(op: SolveOp) -> _LuKernel:
        lead = type(op).BATCH
        b = shape_of(op.b.type)
        vector = len(b) == lead + 1
        return _LuKernel(op.result.type.element_type, b[lead], 1 if vector else b[-1], vector)

    # -- element access ---------------------------------------------------------
    def at(self, s: Emitter, t: SSAValue, idx: list[Index]) -> SSAValue:
        return s.emit(tensor_d.ExtractOp(t, [_index(s, i) for i in idx], self.etype))

    def put(self, s: Emitter, v: SSAValue, t: SSAValue, idx: list[Index]) -> SSAValue:
        return s.emit(tensor_d.InsertOp(v, t, [_index(s, i) for i in idx]))

    def a_idx(self, pre: list[Index]) -> Callable[[Index, Index], list[Index]]:
        return lambda i, j: [*pre, i, j]

    def b_idx(self, pre: list[Index]) -> Callable[[Index, Index], list[Index]]:
        return (lambda i, j: [*pre, i]) if self.vector else (lambda i, j: [*pre, i, j])

    # -- the solve ------------------------------------------------------------
    def solve(self, e: Emitter, pre: list[Index], a: SSAValue, b: SSAValue) -> list[SSAValue]:
        """``[A (factored), X]``; X is NaN everywhere when a pivot column was all zero."""
        ok = e.scalar(False, i1)
        a, b, singular = _for(e, 0, self.n, [a, b, ok],
                              lambda s, k, a, b, f: self.lu_step(s, pre, k, a, b, f))
        return [a, self.back_substitute(e, pre, a, b, singular)]

    def lu_step(self, s: Emitter, pre: list[Index], k: SSAValue, a: SSAValue, b: SSAValue,
                singular: SSAValue) -> list[SSAValue]:
        """Column ``k``: pick the pivot row, swap it up, eliminate below it."""
        p, peak = self.pivot(s, pre, k, a)
        a = self.swap_rows(s, a, self.a_idx(pre), k, self.n, k, p)
        b = self.swap_rows(s, b, self.b_idx(pre), 0, self.k, k, p)
        a, b = self.eliminate(s, pre, k, a, b)
        return [a, b, s.emit(arith.OrIOp(singular, s.cmp("eq", peak, 0.0)))]

    def pivot(self, s: Emitter, pre: list[Index], k: SSAValue, a: SSAValue) -> list[SSAValue]:
        """``(row, |value|)`` of the first largest ``|A[i, k]|`` for ``i >= k``."""

        def body(t: Emitter, i: SSAValue, row: SSAValue, peak: SSAValue) -> list[SSAValue]:
            v = _magnitude(t, self.at(t, a, [*pre, i, k]))
            better = t.cmp("gt", v, peak)
            return [t.select(better, i, row), t.select(better, v, peak)]

        start = _magnitude(s, self.at(s, a, [*pre, k, k]))
        return _for(s, _iadd(s, k, 1), self.n, [k, start], body)

    def swap_rows(self, s: Emitter, t: SSAValue, idx, lo: Index, hi: Index, r1: SSAValue,
                  r2: SSAValue) -> SSAValue:
        """``t`` with rows ``r1`` and ``r2`` exchanged in columns ``lo..hi``."""

        def body(u: Emitter, j: SSAValue, t: SSAValue) -> list[SSAValue]:
            x, y = self.at(u, t, idx(r1, j)), self.at(u, t, idx(r2, j))
            return [self.put(u, x, self.put(u, y, t, idx(r1, j)), idx(r2, j))]

        return _for(s, lo, hi, [t], body)[0]

    def eliminate(self, s: Emitter, pre: list[Index], k: SSAValue, a: SSAValue,
                  b: SSAValue) -> list[SSAValue]:
        """Rows below ``k``: ``row_i -= (A[i, k] / A[k, k]) row_k`` in A and B."""
        pivot = self.at(s, a, [*pre, k, k])
        k1 = _iadd(s, k, 1)

        def body(t: Emitter, i: SSAValue, a: SSAValue, b: SSAValue) -> list[SSAValue]:
            factor = t.div(self.at(t, a, [*pre, i, k]), pivot)
            a = self.axpy_row(t, a, self.a_idx(pre), k1, self.n, i, k, factor)
            return [a, self.axpy_row(t, b, self.b_idx(pre), 0, self.k, i, k, factor)]

        return _for(s, k1, self.n, [a, b], body)

    def axpy_row(self, s: Emitter, t: SSAValue, idx, lo: Index, hi: Index, i: SSAValue,
                 k: SSAValue, factor: SSAValue) -> SSAValue:
        """``t[i, j] -= factor * t[k, j]`` for ``j`` in ``lo..hi``."""

        def body(u: Emitter, j: SSAValue, t: SSAValue) -> list[SSAValue]:
            v = u.sub(self.at(u, t, idx(i, j)), u.mul(factor, self.at(u, t, idx(k, j))))
            return [self.put(u, v, t, idx(i, j))]

        return _for(s, lo, hi, [t], body)[0]

    def back_substitute(self, e: Emitter, pre: list[Index], a: SSAValue, b: SSAValue,
                        singular: SSAValue) -> SSAValue:
        """Solve ``U X = B`` bottom-up in place in B (NaN when ``singular``)."""
        nan = e.scalar(float("nan"), self.etype)
        idx = self.b_idx(pre)

        def row(s: Emitter, step: SSAValue, b: SSAValue) -> list[SSAValue]:
            i = _isub(s, self.n - 1, step)
            diag = self.at(s, a, [*pre, i, i])

            def col(t: Emitter, j: SSAValue, b: SSAValue) -> list[SSAValue]:
                rest = self.dot_tail(t, pre, a, b, i, j)
                x = t.div(t.sub(self.at(t, b, idx(i, j)), rest), diag)
                return [self.put(t, t.select(singular, nan, x), b, idx(i, j))]

            return _for(s, 0, self.k, [b], col)

        return _for(e, 0, self.n, [b], row)[0]

    def dot_tail(self, s: Emitter, pre: list[Index], a: SSAValue, b: SSAValue, i: SSAValue,
                 j: SSAValue) -> SSAValue:
        """``sum_{m > i} A[i, m] X[m, j]``."""
        idx = self.b_idx(pre)

        def body(t: Emitter, m: SSAValue, acc: SSAValue) -> list[SSAValue]:
            return [t.add(acc, t.mul(self.at(t, a, [*pre, i, m]), self.at(t, b, idx(m, j))))]

        zero = s.scalar(0.0, self.etype)
        return _for(s, _iadd(s, i, 1), self.n, [zero], body)[0]


@LOWER.register(DenseSolveOp, BatchedDenseSolveOp)
def _lower_solve(op: SolveOp, e: Emitter, a: SSAValue, b: SSAValue) -> Any:
    kernel = _LuKernel.of(op)
    if not type(op).BATCH:
        return kernel.solve(e, [], a, b)[1]
    slices = shape_of(a.type)[0]
    return _for(e, 0, slices, [a, b], lambda s, i, a, b: kernel.solve(s, [i], a, b))[1]

