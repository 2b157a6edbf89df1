"""Vectorizable f32 ``exp``, ``log``, ``tanh`` and ``erf`` built from arith ops and ``math.fma``.

``math.exp`` / ``math.tanh`` reach LLVM as intrinsics that the x86 backend scalarizes into
``expf`` / ``tanhf`` calls, one element at a time (notes/CODEGEN.md §2: 5x slower than a
polynomial), and upstream exposes its polynomial approximations only as a test pass. So
the emitter writes them out for f32 (f64 keeps ``math.*``, the reference precision),
each polynomial evaluated with one ``math.fma`` per Horner step (a vector FMA: GELU's
gradient 17% faster than with a mul and an add, and rounded once):

* ``exp``: Cephes ``expf`` -- ``n = round(x log2 e)``, ``r = x - n ln 2`` (two-part
  ln 2), a degree-6 polynomial in ``r``, times ``2^n`` built from the exponent bits;
  ``-inf``/underflow -> 0, overflow -> ``inf``, NaN -> NaN. Max relative error ~2 ulp.
* ``log``: Cephes ``logf`` -- the exponent and a mantissa in ``[sqrt(1/2), sqrt(2))`` from
  the bits (denormals scaled by ``2^23`` first), a degree-8 polynomial in ``m - 1``, plus
  ``e ln 2`` (two-part ln 2); ``0 -> -inf``, ``inf -> inf``, negative or NaN -> NaN. Max
  relative error ~1 ulp (``math.log`` became one ``logf`` call per element: 25x slower
  than numpy's vector log).
* ``tanh``: Eigen's odd/even rational approximation on ``[-7.9, 7.9]`` (outside it
  ``tanh`` rounds to +-1 in f32); max absolute error ~3e-7 over the range.
* ``erf``: the same form on ``[-4, 4]`` (Eigen's coefficients).
* ``sin`` / ``cos`` (:func:`sin_cos_f32`): in f64, ``k = roundeven(x 2/pi)``, ``r = x - k
  pi/2`` with a two-part pi/2 (fdlibm's ``pio2_1``, 33 bits, and ``pio2_1t``: ``k pio2_1``
  is exact for ``|k| < 2^20``), Taylor polynomials to ``r^11`` / ``r^12`` on ``|r| <=
  pi/4`` (errors below 1e-11), the quadrant ``k mod 4`` picking ``+-sin r`` or ``+-cos r``,
  one rounding to f32: within half an ulp up to ``|x| <= SIN_COS_RANGE``. Larger
  arguments need Payne-Hanek reduction: the lowerings of ``rlx.sin`` / ``rlx.cos`` check
  ``max |x|`` and then run ``math.sin`` (libm) instead.

>>> # inside a LOWER rule body: s.exp(v) emits these ops for an f32 ``v``
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import BFloat16Type, Float32Type, IntegerType

if TYPE_CHECKING:
    from rlx_mlir.lowering.emitter import Emitter, Value

_LOG2E = 1.44269504088896341
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_EXP_POLY = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
             1.6666665459e-1, 5.0000001201e-1)
_EXP_MIN, _EXP_MAX = -87.33654, 88.72283

_SQRT_HALF = 0.707106781186547524
_FLT_MIN = 1.17549435e-38
_LOG_POLY = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
             1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
             3.3333331174e-1)

_TANH_CLAMP = 7.90531110763549805
_TANH_NUM = (-2.76076847742355e-16, 2.00018790482477e-13, -8.60467152213735e-11,
             5.12229709037114e-08, 1.48572235717979e-05, 6.37261928875436e-04,
             4.89352455891786e-03)
_TANH_DEN = (1.19825839466702e-06, 1.18534705686654e-04, 2.26843463243900e-03,
             4.89352518554385e-03)

_ERF_CLAMP = 4.0
_ERF_NUM = (-2.72614225801306e-10, 2.77068142495902e-08, -2.10102402082508e-06,
            -5.69250639462346e-05, -7.34990630326855e-04, -2.95459980854025e-03,
            -1.60960333262415e-02)
_ERF_DEN = (-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03,
            -7.37332916720468e-03, -1.42647390514189e-02)


def is_f32(x: Value) -> bool:
    return isinstance(x.type, Float32Type)


def _fma(s: Emitter, a: Value, b: Value | float, c: Value | float) -> Value:
    """``a * b + c`` rounded once (``math.fma``: one vector FMA instead of a mul and an add)."""
    return s.emit(math.FmaOp(a, s.scalar(b, a.type), s.scalar(c, a.type)))


def _horner(s: Emitter, x: Value, coefficients: tuple[float, ...]) -> Value:
    """``c0 x^(n-1) + c1 x^(n-2) + ... + c_{n-1}`` (highest power first), one FMA a step."""
    acc = s.scalar(coefficients[0], x.type)
    for c in coefficients[1:]:
        acc = _fma(s, acc, x, c)
    return acc


def _pow2(s: Emitter, n: Value) -> Value:
    """``2^(n-1)`` for an integral-valued f32 ``n`` in [-126, 128] (exponent bits)."""
    i32 = IntegerType(32)
    ni = s.emit(arith.FPToSIOp(n, i32))
    bits = s.emit(arith.ShLIOp(s.add(ni, 126), s.scalar(23, i32)))
    return s.emit(arith.BitcastOp(bits, Float32Type()))


def exp_f32(s: Emitter, x: Value) -> Value:
    """``exp(x)`` for f32 as arith ops (see the module docstring)."""
    xc = s.min(s.max(x, _EXP_MIN), _EXP_MAX)
    n = s.floor(_fma(s, xc, _LOG2E, 0.5))
    r = s.sub(s.sub(xc, s.mul(n, _LN2_HI)), s.mul(n, _LN2_LO))
    poly = s.add(_fma(s, _horner(s, r, _EXP_POLY), s.mul(r, r), r), 1.0)
    y = s.mul(s.mul(poly, _pow2(s, n)), 2.0)
    y = s.select(s.cmp("lt", x, _EXP_MIN), 0.0, y)
    y = s.select(s.cmp("gt", x, _EXP_MAX), float("inf"), y)
    return s.select(s.cmp("ne", x, x), x, y)


def _exponent_and_mantissa(s: Emitter, x: Value) -> tuple[Value, Value]:
    """``(e, m)`` with ``x = m 2^e``, ``m`` in ``[0.5, 1)`` (``frexp``), for positive
    normal ``x``; ``e`` as f32."""
    i32 = IntegerType(32)
    bits = s.emit(arith.BitcastOp(x, i32))
    biased = s.emit(arith.AndIOp(s.shift_right(bits, 23), s.scalar(0xFF, i32)))
    mantissa = s.emit(arith.OrIOp(s.emit(arith.AndIOp(bits, s.scalar(0x007FFFFF, i32))),
                                  s.scalar(0x3F000000, i32)))
    return s.sub(s.cast(biased, x.type), 126.0), s.emit(arith.BitcastOp(mantissa, x.type))


def log_f32(s: Emitter, x: Value) -> Value:
    """``log(x)`` for f32 as arith ops (see the module docstring)."""
    tiny = s.cmp("lt", x, _FLT_MIN)
    e, m = _exponent_and_mantissa(s, s.select(tiny, s.mul(x, 8388608.0), x))
    e = s.select(tiny, s.sub(e, 23.0), e)
    low = s.cmp("lt", m, _SQRT_HALF)
    e = s.select(low, s.sub(e, 1.0), e)
    f = s.sub(s.select(low, s.add(m, m), m), 1.0)
    z = s.mul(f, f)
    y = _fma(s, e, _LN2_LO, s.mul(s.mul(f, z), _horner(s, f, _LOG_POLY)))
    y = _fma(s, e, _LN2_HI, s.add(f, _fma(s, z, -0.5, y)))
    y = s.select(s.cmp("eq", x, float("inf")), x, y)
    y = s.select(s.cmp("eq", x, 0.0), float("-inf"), y)
    return s.select(s.cmp("lt", x, 0.0), float("nan"), s.select(s.cmp("ne", x, x), x, y))


def _odd_rational(s: Emitter, x: Value, clamp: float, num: tuple[float, ...],
                  den: tuple[float, ...]) -> Value:
    """``x P(x^2) / Q(x^2)`` on ``x`` clamped to ``[-clamp, clamp]``, clamped to [-1, 1];
    exactly +-1 from the clamp on (where the f32 function has rounded to +-1: the FMA
    evaluation lands one ulp short of it there, and ``x * (1 - tanh(x))`` at ``x = inf``
    must stay NaN)."""
    xc = s.min(s.max(x, -clamp), clamp)
    x2 = s.mul(xc, xc)
    ratio = s.div(s.mul(xc, _horner(s, x2, num)), _horner(s, x2, den))
    ratio = s.min(s.max(ratio, -1.0), 1.0)
    return s.select(s.cmp("ge", s.abs(x), clamp), s.copysign(1.0, x), ratio)


def tanh_f32(s: Emitter, x: Value) -> Value:
    """``tanh(x)`` for f32 as arith ops (see the module docstring)."""
    return _odd_rational(s, x, _TANH_CLAMP, _TANH_NUM, _TANH_DEN)


def erf_f32(s: Emitter, x: Value) -> Value:
    """``erf(x)`` for f32 as arith ops: Eigen's rational approximation on [-4, 4]."""
    return _odd_rational(s, x, _ERF_CLAMP, _ERF_NUM, _ERF_DEN)


def f32_to_bf16(s: Emitter, x: Value) -> Value:
    """f32 -> bf16 rounded to nearest even on the bits, subnormals kept (as numpy's
    ``ml_dtypes.bfloat16``): the x86 instruction LLVM picks flushes them to zero."""
    i32 = IntegerType(32)
    bits = s.emit(arith.BitcastOp(x, i32))
    odd = s.emit(arith.AndIOp(s.shift_right(bits, 16), s.scalar(1, i32)))
    rounded = s.shift_right(s.add(s.add(bits, 0x7FFF), odd), 16)
    quiet_nan = s.emit(arith.OrIOp(s.shift_right(bits, 16), s.scalar(0x40, i32)))
    top = s.select(s.cmp("ne", x, x), quiet_nan, rounded)
    half = s.emit(arith.TruncIOp(top, IntegerType(16)))
    return s.emit(arith.BitcastOp(half, BFloat16Type()))


SIN_COS_RANGE = 524288.0
"""``|x|`` up to which :func:`sin_cos_f32` is accurate (``2^19``: ``|k| < 2^19 < 2^20``)."""
_TWO_OVER_PI = 0.63661977236758134308
_ROUND_SHIFT = 6755399441055744.0  # 1.5 * 2^52
_PIO2_1, _PIO2_1T = 1.57079632673412561417e+00, 6.07710050650619224932e-11
_SIN_POLY = (-1.0 / 39916800, 1.0 / 362880, -1.0 / 5040, 1.0 / 120, -1.0 / 6)
_COS_POLY = (1.0 / 479001600, -1.0 / 3628800, 1.0 / 40320, -1.0 / 720, 1.0 / 24, -0.5)


def sin_cos_f32(s: Emitter, x: Value, cosine: bool) -> Value:
    """``sin(x)`` (or ``cos(x)`` when ``cosine``) of an f32 ``x`` with ``|x| <=
    SIN_COS_RANGE``, vectorizable (module docstring); NaN for NaN and infinities.

    >>> # inside a LOWER rule body: fastmath.sin_cos_f32(s, v, cosine=False)
    """
    xd = s.cast(x, "f64")
    # round to nearest even by the 1.5 * 2^52 shifter (pure adds: vectorizes everywhere)
    k = s.sub(s.add(s.mul(xd, _TWO_OVER_PI), _ROUND_SHIFT), _ROUND_SHIFT)
    r = _fma(s, s.neg(k), _PIO2_1T, _fma(s, s.neg(k), _PIO2_1, xd))
    r2 = s.mul(r, r)
    sin_r = _fma(s, s.mul(r, r2), _horner(s, r2, _SIN_POLY), r)
    cos_r = _fma(s, s.mul(r2, r2), _horner(s, r2, _COS_POLY[:-1]), _fma(s, r2, -0.5, 1.0))
    if cosine:  # cos(r + k pi/2) = sin(r + (k + 1) pi/2)
        k = s.add(k, 1.0)
    quadrant = s.sub(k, s.mul(s.floor(s.mul(k, 0.25)), 4.0))  # k mod 4, exactly, in 0..3
    value = s.select(s.cmp("eq", s.sub(quadrant, s.mul(s.floor(s.mul(quadrant, 0.5)), 2.0)),
                           1.0), cos_r, sin_r)
    negative = s.cmp("ge", quadrant, 2.0)
    result = s.cast(s.select(negative, s.neg(value), value), "f32")
    return result if cosine else s.select(s.cmp("eq", x, 0.0), x, result)  # sin(-0) = -0
