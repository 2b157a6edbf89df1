"""FFT family: the discrete Fourier transform over the last axis (SPEC 2.3.5 ``Fft``).

``rlx.fft`` maps a complex ``[..., N]`` tensor to ``y[..., k] = s sum_n x[..., n]
exp(-+2 pi i k n / N)`` (``+`` when ``inverse``), with the scale ``s`` of ``norm`` as in
numpy: ``backward`` (1 forward, 1/N inverse), ``ortho`` (1/sqrt N both ways), ``forward``
(1/N forward, 1 inverse) or ``none`` (1 both ways)::

    %y = rlx.fft %x {inverse = false, norm = "ortho"}
        : (tensor<8x64xcomplex<f32>>) -> tensor<8x64xcomplex<f32>>

C64 is ``complex<f32>`` rather than RLX's interleaved or real-block f32 layouts (SPEC
10.1). Native code runs a radix-2 Stockham FFT (one parallel loop per stage, log2 N of
them, twiddles from a table computed in f64) when N is a power of two, the direct sum
for other N up to 16, and Bluestein's chirp-z convolution (two power-of-two FFTs of
length >= 2N - 1) above, as SPEC 2.3.5's CPU kernel does. The transform is linear, so its VJP is the adjoint transform
(the inverse direction, same scale: the ``dual`` norm) and its JVP the transform itself.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import tensor as tensor_ops
from xdsl.dialects.builtin import IndexType, IntegerAttr, TensorType
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


def _stockham_stage(e: Any, a: SSAValue, half_span: int, tables, scale: float) -> SSAValue:
    """One radix-2 stage (``half_span`` = Ns): ``out[m] = u +- v w`` with ``q = m mod
    2Ns``, ``j = (m div 2Ns) Ns + q mod Ns``, ``u = a[j]``, ``v = a[j + N/2]``, ``w`` the
    ``(q mod Ns) N / 2Ns``-th twiddle; ``+`` when ``q < Ns``."""
    shape, etype = shape_of(a.type), a.type.element_type
    rank, n = len(shape), shape[-1]

    def body(s: Any, _out: SSAValue) -> SSAValue:
        m = s.emit(IndexOp(rank - 1))
        span = _index(s, 2 * half_span)
        q = s.emit(arith.RemUIOp(m, span))
        k = s.emit(arith.RemUIOp(q, _index(s, half_span)))
        j = s.emit(arith.AddiOp(s.emit(arith.MuliOp(s.emit(arith.DivUIOp(m, span)),
                                                    _index(s, half_span))), k))
        lead = [s.emit(IndexOp(d)) for d in range(rank - 1)]
        u = s.emit(tensor_ops.ExtractOp(a, [*lead, j], etype))
        v = s.emit(tensor_ops.ExtractOp(a, [*lead, s.emit(arith.AddiOp(j, _index(s, n // 2)))],
                                        etype))
        step = s.emit(arith.MuliOp(k, _index(s, n // (2 * half_span))))
        t = s.mul(v, _twiddle(s, tables, step))
        upper = s.emit(arith.CmpiOp(q, _index(s, half_span), "ult"))
        return _scaled(s, s.select(upper, s.add(u, t), s.sub(u, t)), scale)

    init = e.empty(shape, etype)
    return e.generic([], [init], [AffineMap.identity(rank)], ["parallel"] * rank, body)


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


def _stockham(e: Any, x: SSAValue, inverse: bool, scale: float) -> SSAValue:
    """The radix-2 transform of a power-of-two last axis: log2 N stage loops."""
    n = shape_of(x.type)[-1]
    tables = _twiddles(e, n // 2, n, inverse, REAL_OF[dtype_of(x.type)])
    stages = n.bit_length() - 1
    for stage in range(stages):
        x = _stockham_stage(e, x, 1 << stage, tables, scale if stage == stages - 1 else 1.0)
    return x


def _complex_table(e: Any, values: np.ndarray, part: str) -> tuple[SSAValue, SSAValue]:
    dtype = NUMPY_DTYPES[part]
    return e.constant(values.real.astype(dtype)), e.constant(values.imag.astype(dtype))


def _times_table(e: Any, x: SSAValue, table: tuple[SSAValue, SSAValue]) -> SSAValue:
    """``x * t`` with the complex table ``t`` (a constant over the last axis)."""
    return e.elementwise([x, *table], x.type.element_type,
                         lambda s, v, re, im: s.mul(v, s.make_complex(re, im)))


def _bluestein(e: Any, x: SSAValue, inverse: bool, scale: float) -> SSAValue:
    """Any N as a power-of-two convolution (chirp z): with ``w[n] = exp(-+i pi n^2 / N)``,
    ``y = w (conv(x w, conj w))[:N]``; the chirp's transform is computed here in f64, and
    ``n^2`` is reduced mod 2N first, so the angles stay exact."""
    shape = shape_of(x.type)
    n, part = shape[-1], REAL_OF[dtype_of(x.type)]
    size = 1 << (2 * n - 2).bit_length()
    sign = 1.0 if inverse else -1.0
    steps = np.arange(n, dtype=np.int64)
    chirp = np.exp(sign * 1j * np.pi * ((steps * steps) % (2 * n)) / n)
    distance = np.minimum(np.arange(size), size - np.arange(size))
    kernel = np.where(distance < n, np.exp(-sign * 1j * np.pi * ((distance * distance) % (2 * n))
                                           / n), 0.0)
    padded = e.insert_slice(_times_table(e, x, _complex_table(e, chirp, part)),
                            e.fill(0, (*shape[:-1], size), x.type.element_type),
                            [0] * len(shape))
    spectrum = _times_table(e, _stockham(e, padded, False, 1.0),
                            _complex_table(e, np.fft.fft(kernel), part))
    convolved = _stockham(e, spectrum, True, 1.0 / size)
    head = e.extract_slice(convolved, [0] * len(shape), shape)
    return _times_table(e, head, _complex_table(e, chirp * scale, part))


DIRECT_MAX = 16
"""Lengths up to this (not powers of two) take the direct sum (SPEC 2.3.5: naive DFT
for N <= 16); longer ones Bluestein's convolution."""


@LOWER.register(FftOp)
def _lower_fft(op: FftOp, e: Any, x: SSAValue) -> SSAValue:
    inverse, norm = _params(op)
    n = shape_of(x.type)[-1]
    scale = fft_scale(n, inverse, norm)
    if n == 1:
        return x if scale == 1.0 else e.elementwise([x], x.type.element_type,
                                                    lambda s, v: _scaled(s, v, scale))
    if not n & (n - 1):
        return _stockham(e, x, inverse, scale)
    if n > DIRECT_MAX:
        return _bluestein(e, x, inverse, scale)
    part = REAL_OF[dtype_of(x.type)]
    return _direct_dft(e, x, _twiddles(e, n, n, inverse, part), scale)
