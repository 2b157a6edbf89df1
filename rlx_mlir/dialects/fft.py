"""FFT family: the discrete Fourier transform over the last axis (SPEC 2.3.5 ``Fft``).

``rlx.fft`` maps a complex ``[..., N]`` tensor to ``y[..., k] = s sum_n x[..., n]
exp(-+2 pi i k n / N)`` (``+`` when ``inverse``), with the scale ``s`` of ``norm`` as in
numpy: ``backward`` (1 forward, 1/N inverse), ``ortho`` (1/sqrt N both ways), ``forward``
(1/N forward, 1 inverse) or ``none`` (1 both ways)::

    %y = rlx.fft %x {inverse = false, norm = "ortho"}
        : (tensor<8x64xcomplex<f32>>) -> tensor<8x64xcomplex<f32>>

C64 is ``complex<f32>`` rather than RLX's interleaved or real-block f32 layouts (SPEC
10.1). Native code runs a radix-2 Stockham FFT when N is a power of two, the direct sum
for other N up to 16, and Bluestein's chirp-z convolution (two power-of-two FFTs of
length >= 2N - 1) above, as SPEC 2.3.5's CPU kernel does. The Stockham stages work on
separate real and imaginary f32/f64 planes, reading the two halves through affine maps,
so they vectorize (complex element loops cannot); rows go through all stages in blocks
that stay in L2, the blocks split over the threads. Twiddles are computed in f64. The transform is linear, so its VJP is the adjoint transform
(the inverse direction, same scale: the ``dual`` norm) and its JVP the transform itself.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects import arith, func
from xdsl.dialects import tensor as tensor_ops
from xdsl.dialects.builtin import (
    ComplexType,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    TensorType,
    i64,
)
from xdsl.dialects.linalg.ops import IndexOp
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    COMPLEX_DTYPES,
    NUMPY_DTYPES,
    REAL_OF,
    RlxOp,
    ShapeError,
    dtype_of,
    optional,
    shape_of,
)
from rlx_mlir.rules import INTERPRET, JVP, LOWER, VJP, VMAP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext

NORMS = ("backward", "ortho", "forward", "none")
DUAL_NORM = {"backward": "forward", "forward": "backward", "ortho": "ortho", "none": "none"}
"""The norm of the adjoint: the opposite direction with the same scale."""


def fft_scale(n: int, inverse: bool, norm: str) -> float:
    """The factor ``norm`` puts on the unscaled transform: ``fft_scale(4, True,
    "backward") == 0.25``."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    scaled = {"backward": inverse, "forward": not inverse, "none": False}[norm]
    return 1.0 / n if scaled else 1.0


@irdl_op_definition
class FftOp(RlxOp):
    """The DFT over the last axis (module docstring); ``x`` is c64 or c128."""

    name = "rlx.fft"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "inverse": "bool, default false: exp(+2 pi i k n / N) instead of exp(-...)",
        "norm": "string, default backward: " + "|".join(NORMS) + " (numpy's scales)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        shape, dtype = shape_of(types[0]), dtype_of(types[0])
        if dtype not in COMPLEX_DTYPES:
            raise ShapeError(f"operand must be c64 or c128 (cast real data first), got {dtype}")
        if not shape:
            raise ShapeError("operand must have rank >= 1 (the transform runs over the last "
                             "axis), got a 0-d tensor")
        optional(attrs, "inverse", bool, False)
        norm = optional(attrs, "norm", str, "backward")
        if norm not in NORMS:
            raise ShapeError(f"norm must be one of {', '.join(NORMS)}, got '{norm}'")
        return [types[0]]


OPS = [FftOp]


def _params(op: RlxOp) -> tuple[bool, str]:
    return bool(op.attr("inverse", False)), str(op.attr("norm", "backward"))


@INTERPRET.register(FftOp)
def _interpret_fft(op: FftOp, x: np.ndarray) -> np.ndarray:
    inverse, norm = _params(op)
    n = x.shape[-1]
    if x.size == 0:
        return x.copy()
    unscaled = np.fft.ifft(x, norm="forward") if inverse else np.fft.fft(x, norm="backward")
    return (unscaled * fft_scale(n, inverse, norm)).astype(x.dtype)


@VJP.register(FftOp)
def _vjp_fft(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    """``y = s F x``: the cotangent of x is ``s F^H g``, the other direction's transform."""
    inverse, norm = _params(op)
    return [ctx.b.fft(g, inverse=not inverse, norm=DUAL_NORM[norm])]


@JVP.register(FftOp)
def _jvp_fft(ctx: JvpContext, op: RlxOp, t: Tensor | None) -> list[Tensor | None]:
    inverse, norm = _params(op)
    return [None if t is None else ctx.b.fft(t, inverse=inverse, norm=norm)]


VMAP.register(FftOp)(lambda ctx, op, xs, batched: ctx.emit_like(op, xs))


# ---------------------------------------------------------------- lowering


def _index(s: Any, value: int) -> SSAValue:
    return s.emit(arith.ConstantOp(IntegerAttr(value, IndexType())))


def _twiddles(e: Any, count: int, n: int, inverse: bool, part: str) -> tuple[SSAValue, SSAValue]:
    """Constant tables ``cos(2 pi t / n)`` and ``-+sin(2 pi t / n)``, ``t < count``,
    computed in f64 and rounded once to the part type."""
    angle = 2.0 * np.pi * np.arange(count, dtype=np.float64) / n
    sign = 1.0 if inverse else -1.0
    dtype = NUMPY_DTYPES[part]
    return e.constant(np.cos(angle).astype(dtype)), e.constant((sign * np.sin(angle)).astype(dtype))


def _twiddle(s: Any, tables: tuple[SSAValue, SSAValue], index: SSAValue) -> SSAValue:
    cos, sin = (s.emit(tensor_ops.ExtractOp(t, [index], t.type.element_type)) for t in tables)
    return s.make_complex(cos, sin)


def _scaled(s: Any, value: SSAValue, scale: float) -> SSAValue:
    return value if scale == 1.0 else s.mul(value, complex(scale, 0.0))


def _split_parts(e: Any, x: SSAValue) -> tuple[SSAValue, SSAValue]:
    """The real and imaginary planes of a complex tensor (one two-result generic)."""
    shape, part = shape_of(x.type), x.type.element_type.element_type
    rank = len(shape)
    outs = [e.empty(shape, part), e.empty(shape, part)]
    op = e.generic([x], outs, [AffineMap.identity(rank)] * 3, ["parallel"] * rank,
                   lambda s, z, _r, _i: [s.real(z), s.imag(z)])
    return op.results[0], op.results[1]


def _joined(e: Any, re: SSAValue, im: SSAValue, scale: float) -> SSAValue:
    return e.elementwise([re, im], ComplexType(re.type.element_type),
                         lambda s, a, b: _scaled(s, s.make_complex(a, b), scale))


def _regroup(e: Any, x: SSAValue, out_shape: Sequence[int], lead: int) -> SSAValue:
    """Reshape that keeps the first ``lead`` dims and regroups the rest: an expand of the
    last dim, or a collapse of the trailing dims into one (a strided slice stays a view)."""
    from rlx_mlir.lowering.emitter import _reassociation

    shape, etype = shape_of(x.type), x.type.element_type
    expand = len(out_shape) > len(shape)
    groups = [[i] for i in range(lead)]
    groups.append(list(range(lead, len(out_shape) if expand else len(shape))))
    cls = tensor_ops.ExpandShapeOp if expand else tensor_ops.CollapseShapeOp
    props = {"static_output_shape": DenseArrayBase.from_list(i64, list(out_shape))}
    op = cls.create(operands=[x], result_types=[TensorType(etype, list(out_shape))],
                    properties={"reassociation": _reassociation(groups),
                                **(props if expand else {})})
    return e.emit(op)


def _stockham_stage(e: Any, re: SSAValue, im: SSAValue, half_span: int, inverse: bool
                    ) -> tuple[SSAValue, SSAValue]:
    """One radix-2 stage on the planes (``Ns = half_span``, ``B = N / 2Ns``): with ``u`` the
    first half and ``v`` the second viewed as ``[B, Ns]``, ``out[b, h, k] = u[b, k] +-
    v[b, k] w[k]``, ``w[k] = exp(-+i pi k / Ns)``, ``+`` for ``h = 0``. Affine reads only,
    so the loop vectorizes along ``k``."""
    shape = shape_of(re.type)
    lead, n = list(shape[:-1]), shape[-1]
    blocks, part = n // (2 * half_span), dtype_of(re.type)

    def halves(x: SSAValue) -> list[SSAValue]:
        zeros = [0] * len(lead)
        return [_regroup(e, e.extract_slice(x, [*zeros, start], [*lead, n // 2]),
                         [*lead, blocks, half_span], len(lead)) for start in (0, n // 2)]

    (ur, vr), (ui, vi) = halves(re), halves(im)
    angle = np.pi * np.arange(half_span, dtype=np.float64) / half_span
    dtype = NUMPY_DTYPES[part]
    wr = e.constant(np.cos(angle).astype(dtype))
    wi = e.constant(((1.0 if inverse else -1.0) * np.sin(angle)).astype(dtype))
    sign = e.constant(np.array([1.0, -1.0], dtype))
    rank = len(lead) + 3
    dims = [AffineExpr.dimension(d) for d in range(rank)]
    data = AffineMap(rank, 0, (*dims[:len(lead)], dims[-3], dims[-1]))
    maps = [data] * 4 + [AffineMap(rank, 0, (dims[-1],))] * 2 + [
        AffineMap(rank, 0, (dims[-2],))] + [AffineMap.identity(rank)] * 2
    out_shape = [*lead, blocks, 2, half_span]
    outs = [e.empty(out_shape, re.type.element_type) for _ in range(2)]

    def body(s: Any, ur, ui, vr, vi, wr, wi, sg, _a, _b):
        tr = s.sub(s.mul(vr, wr), s.mul(vi, wi))
        ti = s.add(s.mul(vr, wi), s.mul(vi, wr))
        return [s.add(ur, s.mul(sg, tr)), s.add(ui, s.mul(sg, ti))]

    op = e.generic([ur, ui, vr, vi, wr, wi, sign], outs, maps, ["parallel"] * rank, body)
    return tuple(_regroup(e, r, shape, len(lead)) for r in op.results)  # type: ignore[return-value]


def _direct_dft(e: Any, x: SSAValue, tables, scale: float) -> SSAValue:
    """``y[k] = s sum_n x[n] w[(k n) mod N]``: a generic with the reduction over n."""
    shape, etype = shape_of(x.type), x.type.element_type
    rank, n = len(shape), shape[-1]
    lead = tuple(AffineExpr.dimension(d) for d in range(rank - 1))
    read = AffineMap(rank + 1, 0, (*lead, AffineExpr.dimension(rank)))
    write = AffineMap(rank + 1, 0, (*lead, AffineExpr.dimension(rank - 1)))

    def body(s: Any, xv: SSAValue, acc: SSAValue) -> SSAValue:
        k, m = s.emit(IndexOp(rank - 1)), s.emit(IndexOp(rank))
        index = s.emit(arith.RemUIOp(s.emit(arith.MuliOp(k, m)), _index(s, n)))
        return s.add(acc, s.mul(xv, _twiddle(s, tables, index)))

    summed = e.generic([x], [e.fill(0, shape, etype)], [read, write],
                       ["parallel"] * rank + ["reduction"], body)
    if scale == 1.0:
        return summed
    return e.elementwise([summed], etype, lambda s, v: _scaled(s, v, scale))


Planes = tuple[SSAValue, SSAValue]


def _stockham_planes(e: Any, re: SSAValue, im: SSAValue, inverse: bool) -> Planes:
    """The unscaled radix-2 transform of power-of-two planes: log2 N stage loops."""
    for stage in range(shape_of(re.type)[-1].bit_length() - 1):
        re, im = _stockham_stage(e, re, im, 1 << stage, inverse)
    return re, im


def _stockham_rows(e: Any, x: SSAValue, inverse: bool, scale: float) -> SSAValue:
    """The radix-2 transform of a power-of-two last axis: split into real and imaginary
    planes, log2 N stage loops on them (vectorized), joined (and scaled) again."""
    return _joined(e, *_stockham_planes(e, *_split_parts(e, x), inverse), scale)


BLOCK_BYTES = 1 << 17
"""Rows are transformed in blocks of about this many bytes of planes (L2-resident), so
the log2 N stages of a block do not each stream the whole batch from memory."""


def _row_block(rows: int, n: int, itemsize: int) -> int:
    """The largest divisor of ``rows`` whose planes fit :data:`BLOCK_BYTES`."""
    fit = max(1, BLOCK_BYTES // (2 * n * itemsize))
    return max(d for d in range(1, min(rows, fit) + 1) if rows % d == 0)


def _blocked(e: Any, x: SSAValue, width: int, rows_fn: Any) -> SSAValue:
    """``rows_fn(emitter, block)`` on blocks of rows of ``x`` whose working planes
    (``width`` wide) fit :data:`BLOCK_BYTES`, the blocks split over the threads."""
    from rlx_mlir.lowering import forall as F
    from rlx_mlir.lowering.schedules import num_threads

    shape, ctype = shape_of(x.type), x.type.element_type
    n, rows = shape[-1], math.prod(shape[:-1])
    block = _row_block(rows, width, 4 if REAL_OF[dtype_of(x.type)] == "f32" else 8)
    if block == rows or not isinstance(e.insert_point.block.parent_op(), func.FuncOp):
        return rows_fn(e, x)
    blocks = e.reshape(x, (rows // block, block, n))

    def body(t: Any, ivs: Sequence[SSAValue]) -> list[tuple[SSAValue, list]]:
        part = F.slice_of(t, blocks, [ivs[0], 0, 0], [1, block, n])
        return [(rows_fn(t, part), [ivs[0], 0, 0])]

    out = F.chunked_forall(e, num_threads(), [rows // block, 1],
                           [e.empty([rows // block, block, n], ctype)], body)[0]
    return e.reshape(out, shape)


def _times_table(e: Any, re: SSAValue, im: SSAValue, table: np.ndarray) -> Planes:
    """The planes of ``(re + i im) * t`` for a complex numpy table ``t`` over the last
    axis (a constant of the planes' type; one two-result generic)."""
    shape, part = shape_of(re.type), dtype_of(re.type)
    rank = len(shape)
    cos, sin = (e.constant(v.astype(NUMPY_DTYPES[part])) for v in (table.real, table.imag))
    last = AffineMap(rank, 0, (AffineExpr.dimension(rank - 1),))
    maps = [AffineMap.identity(rank)] * 2 + [last] * 2 + [AffineMap.identity(rank)] * 2

    def body(s: Any, a: Any, b: Any, c: Any, d: Any, _r: Any, _i: Any) -> list[Any]:
        return [s.sub(s.mul(a, c), s.mul(b, d)), s.add(s.mul(a, d), s.mul(b, c))]

    outs = [e.empty(shape, re.type.element_type) for _ in range(2)]
    op = e.generic([re, im, cos, sin], outs, maps, ["parallel"] * rank, body)
    return op.results[0], op.results[1]


def _bluestein_rows(e: Any, x: SSAValue, inverse: bool, scale: float) -> SSAValue:
    """Any N as a power-of-two convolution (chirp z): with ``w[n] = exp(-+i pi n^2 / N)``,
    ``y = w (conv(x w, conj w))[:N]``, on real/imaginary planes throughout; the chirp's
    transform is computed here in f64, and ``n^2`` is reduced mod 2N first, so the angles
    stay exact."""
    shape = shape_of(x.type)
    n, size = shape[-1], _bluestein_size(shape[-1])
    sign = 1.0 if inverse else -1.0
    steps = np.arange(n, dtype=np.int64)
    chirp = np.exp(sign * 1j * np.pi * ((steps * steps) % (2 * n)) / n)
    distance = np.minimum(np.arange(size), size - np.arange(size))
    kernel = np.where(distance < n, np.exp(-sign * 1j * np.pi * ((distance * distance) % (2 * n))
                                           / n), 0.0)
    zeros = [0] * len(shape)
    padded = [e.insert_slice(p, e.fill(0.0, (*shape[:-1], size), p.type.element_type), zeros)
              for p in _times_table(e, *_split_parts(e, x), chirp)]
    spectrum = _times_table(e, *_stockham_planes(e, *padded, False), np.fft.fft(kernel))
    convolved = _stockham_planes(e, *spectrum, True)
    heads = [e.extract_slice(p, zeros, shape) for p in convolved]
    return _joined(e, *_times_table(e, *heads, chirp * (scale / size)), 1.0)


def _bluestein_size(n: int) -> int:
    """The power of two Bluestein's convolution runs at: at least ``2N - 1``."""
    return 1 << (2 * n - 2).bit_length()


DIRECT_MAX = 16
"""Lengths up to this (not powers of two) take the direct sum (SPEC 2.3.5: naive DFT
for N <= 16); longer ones Bluestein's convolution."""


@LOWER.register(FftOp)
def _lower_fft(op: FftOp, e: Any, x: SSAValue) -> SSAValue:
    inverse, norm = _params(op)
    n = shape_of(x.type)[-1]
    if 0 in shape_of(x.type):
        return x  # nothing to transform
    scale = fft_scale(n, inverse, norm)
    if n == 1:
        return x if scale == 1.0 else e.elementwise([x], x.type.element_type,
                                                    lambda s, v: _scaled(s, v, scale))
    if not n & (n - 1):
        return _blocked(e, x, n, lambda t, rows: _stockham_rows(t, rows, inverse, scale))
    if n > DIRECT_MAX:
        return _blocked(e, x, _bluestein_size(n),
                        lambda t, rows: _bluestein_rows(t, rows, inverse, scale))
    part = REAL_OF[dtype_of(x.type)]
    return _direct_dft(e, x, _twiddles(e, n, n, inverse, part), scale)
