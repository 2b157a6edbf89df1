"""Quantization family: int8 quantize/dequantize and the fake-quantize ops of
quantization-aware training (SPEC 2.3.1; their backward ops are in ``backward/quant``).

``axis`` (optional) names the channel axis: scales and zero points are ``[C]`` with
``C = x.shape[axis]``, or one value (shape ``[]`` or ``[1]``) per tensor without it.
Rounding is half away from zero, as everywhere in rlx::

    %q = rlx.quantize %x, %s, %zp {axis = 1 : i64}
        : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xi32>) -> tensor<4x3xi8>
    %y = rlx.fake_quantize %x {bits = 4 : i64, ste = "clipped_identity"}
        : (tensor<4x3xf32>) -> tensor<4x3xf32>

* ``quantize``: ``q = clamp(round(x / s) + zp, -128, 127)`` as i8; ``dequantize``:
  ``(q - zp) s``. For inference: they have no gradient (train with ``fake_quantize``).
* ``fake_quantize{bits, axis, ste}``: symmetric quantise-dequantise
  ``clamp(round(x / s), -q, q) s`` with ``q = 2^(bits-1) - 1`` (bits 8, 4 or 2) and the
  per-batch scale ``s = max(max|x| / q, 1e-12)`` over each channel, or the given ``scale``
  operand (SPEC's Fixed mode). Its gradient is a straight-through estimate: ``ste`` =
  ``identity`` (dy), ``clipped_identity`` (dy where ``|round(x / s)| <= q``), ``tanh``
  (``dy (1 - tanh^2(x / s))``) or ``hard_tanh`` (``dy max(0, 1 - |x| / (q s))``), with
  the forward pass's scale (SPEC defect 21 recomputed it).
* ``fake_quantize_lsq{bits, axis}``: the same with a learnable ``scale`` operand (LSQ):
  ``dx = dy [|x / s| <= q]``, ``ds = sum psi(x / s) dy`` with ``psi(z) = round(z) - z``
  inside the range and ``sign(z) q`` outside (no LSQ gradient scale, as SPEC).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from rlx_mlir.dialects.base import (
    FLOAT_DTYPES,
    RlxOp,
    ShapeError,
    dtype_of,
    norm_axis,
    optional,
    require,
    shape_of,
    tensor,
)
from rlx_mlir.dialects.elementwise import round_half_away
from rlx_mlir.rules import INTERPRET, JVP, LOWER, VJP, VMAP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext

STES = ("identity", "clipped_identity", "tanh", "hard_tanh")
MIN_SCALE = 1e-12
AXIS_DOC = "i64, optional: the channel axis (scales are [C]); per tensor without it"
BITS_DOC = "i64, default 8: 8, 4 or 2 (the levels -q..q, q = 2^(bits-1) - 1)"


# ---------------------------------------------------------------- shared checks


def channel_axis(attrs: dict[str, Any], x_shape: Sequence[int]) -> int | None:
    axis = optional(attrs, "axis", int, None)
    return None if axis is None else norm_axis(axis, len(x_shape), "axis")


def q_max(attrs: dict[str, Any]) -> int:
    bits = optional(attrs, "bits", int, 8)
    if bits not in (8, 4, 2):
        raise ShapeError(f"bits must be 8, 4 or 2, got {bits}")
    return 2 ** (bits - 1) - 1


def check_ste(attrs: dict[str, Any]) -> str:
    ste = optional(attrs, "ste", str, "identity")
    if ste not in STES:
        raise ShapeError(f"ste must be one of {', '.join(STES)}, got '{ste}'")
    return ste


def expect_float_x(t: TensorType, what: str = "x") -> str:
    dtype = dtype_of(t)
    if dtype not in FLOAT_DTYPES:
        raise ShapeError(f"{what} must be f32 or f64, got {t}")
    return dtype


def check_channel_operand(t: TensorType, x_shape: Sequence[int], axis: int | None,
                          what: str, dtype: str) -> None:
    """A scale / zero point: ``[C]`` with an axis, ``[]`` or ``[1]`` without."""
    want = [(x_shape[axis],)] if axis is not None else [(), (1,)]
    if shape_of(t) not in want or dtype_of(t) != dtype:
        shapes = " or ".join(str(list(s)) for s in want)
        raise ShapeError(f"{what} must be {dtype} of shape {shapes}, got {t}")


def keep_dims_shape(x_shape: Sequence[int], axis: int | None) -> tuple[int, ...]:
    """The shape a per-channel value broadcasts from: ``C`` at ``axis``, 1 elsewhere."""
    return tuple(d if i == axis else 1 for i, d in enumerate(x_shape))


# ---------------------------------------------------------------- numpy math (interpreter)


def as_channels(value: np.ndarray, x_shape: Sequence[int], axis: int | None) -> np.ndarray:
    return np.reshape(value, keep_dims_shape(x_shape, axis))


def batch_scale(x: np.ndarray, axis: int | None, qmax: int) -> np.ndarray:
    """``max(max|x| / q, 1e-12)`` per channel, broadcastable against ``x``."""
    others = tuple(i for i in range(x.ndim) if i != axis)
    peak = np.max(np.abs(x), axis=others, keepdims=True) if x.size else np.zeros(())
    return np.maximum(peak / x.dtype.type(qmax), x.dtype.type(MIN_SCALE)).astype(x.dtype)


def fake_quantized(x: np.ndarray, s: np.ndarray, qmax: int) -> np.ndarray:
    return (np.clip(round_half_away(x / s), -qmax, qmax) * s).astype(x.dtype)


def op_scale(op: RlxOp, x: np.ndarray, scale: np.ndarray | None) -> np.ndarray:
    """The scale a fake-quantize op uses: the operand (floored at 1e-12) or per batch."""
    attrs = op.py_attrs()
    axis = channel_axis(attrs, x.shape)
    if scale is None:
        return batch_scale(x, axis, q_max(attrs))
    return np.maximum(as_channels(scale, x.shape, axis), x.dtype.type(MIN_SCALE))


# ---------------------------------------------------------------- quantize / dequantize


class AffineQuantOp(RlxOp):
    """``x, scale, zero_point`` -> the other side of the affine map ``x = (q - zp) s``."""

    TAKES_STORAGE: ClassVar[bool] = True
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    zero_point = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"axis": AXIS_DOC}
    QUANTIZES: ClassVar[bool] = True

    @classmethod
    def infer(cls, types, attrs, out):
        x, scale, zero_point = types
        shape = shape_of(x)
        if cls.QUANTIZES:
            dtype = expect_float_x(x)
        elif dtype_of(x) != "i8":
            raise ShapeError(f"q must be i8, got {x}")
        else:
            dtype = expect_float_x(scale, "scale")
        axis = channel_axis(attrs, shape)
        check_channel_operand(scale, shape, axis, "scale", dtype)
        check_channel_operand(zero_point, shape, axis, "zero_point", "i32")
        return [tensor(shape, "i8" if cls.QUANTIZES else dtype)]


@irdl_op_definition
class QuantizeOp(AffineQuantOp):
    """``clamp(round(x / scale) + zero_point, -128, 127)`` as i8 (module docstring)."""

    name = "rlx.quantize"


@irdl_op_definition
class DequantizeOp(AffineQuantOp):
    """``(q - zero_point) * scale`` in the scale's dtype (``q`` is the operand ``x``)."""

    name = "rlx.dequantize"
    QUANTIZES: ClassVar[bool] = False


@irdl_op_definition
class QMatMulOp(RlxOp):
    """Integer matmul (SPEC 2.3.1 ``QMatMul``): ``acc = bias + sum_k (x - x_zp)(w - w_zp)``
    in i32, then ``clamp(round(acc * mult) + out_zp, -128, 127)`` as i8 (``mult`` is an
    f32 attribute; the product is taken in f64 and rounded half away from zero).
    ``x [M, K]``, ``w [K, N]`` i8; ``bias [N]`` i32; zero points in [-128, 127]."""

    name = "rlx.qmatmul"
    TAKES_STORAGE: ClassVar[bool] = True
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "x_zp": "i64, default 0: x's zero point", "w_zp": "i64, default 0: w's zero point",
        "out_zp": "i64, default 0: the result's zero point",
        "mult": "f32, required: the requantization multiplier (s_x s_w / s_out)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        x, w, bias = types
        for name, t in (("x", x), ("w", w)):
            if dtype_of(t) != "i8" or len(shape_of(t)) != 2:
                raise ShapeError(f"{name} must be a 2-d i8 tensor, got {t}")
        (m, k), (k2, n) = shape_of(x), shape_of(w)
        if k != k2:
            raise ShapeError(f"x is [{m}, {k}] but w is [{k2}, {n}]: inner dims differ")
        if dtype_of(bias) != "i32" or shape_of(bias) != (n,):
            raise ShapeError(f"bias must be i32 of shape [{n}], got {bias}")
        for name in ("x_zp", "w_zp", "out_zp"):
            if not -128 <= optional(attrs, name, int, 0) <= 127:
                raise ShapeError(f"{name} must be in [-128, 127] (an i8 zero point), got "
                                 f"{attrs[name]}")
        mult = require(attrs, "mult", float)
        if not (np.isfinite(mult) and mult > 0):
            raise ShapeError(f"mult must be a finite positive number, got {mult}")
        return [tensor((m, n), "i8")]


@INTERPRET.register(QuantizeOp)
def _interpret_quantize(op: QuantizeOp, x, scale, zero_point) -> np.ndarray:
    """Clamped as floats (no overflow for any ``x / s``); NaN gives the zero point."""
    axis = channel_axis(op.py_attrs(), x.shape)
    zp = as_channels(zero_point, x.shape, axis).astype(x.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        q = round_half_away(x / as_channels(scale, x.shape, axis)) + zp
    q = np.where(np.isnan(q), zp, q)
    return np.clip(q, -128, 127).astype(np.int8)


@INTERPRET.register(DequantizeOp)
def _interpret_dequantize(op: DequantizeOp, q, scale, zero_point) -> np.ndarray:
    axis = channel_axis(op.py_attrs(), q.shape)
    shifted = q.astype(np.int32) - as_channels(zero_point, q.shape, axis)
    return (shifted.astype(scale.dtype) * as_channels(scale, q.shape, axis)).astype(scale.dtype)


def _qmatmul_attrs(op: RlxOp) -> tuple[int, int, int, float]:
    return (op.attr("x_zp", 0), op.attr("w_zp", 0), op.attr("out_zp", 0),
            float(op.attr("mult")))


@INTERPRET.register(QMatMulOp)
def _interpret_qmatmul(op: QMatMulOp, x, w, bias) -> np.ndarray:
    x_zp, w_zp, out_zp, mult = _qmatmul_attrs(op)
    acc = bias.astype(np.int64) + (x.astype(np.int64) - x_zp) @ (w.astype(np.int64) - w_zp)
    acc = acc.astype(np.int32)  # i32 accumulation wraps as native code's
    return np.clip(round_half_away(acc * np.float64(mult)) + out_zp, -128, 127).astype(np.int8)


VJP.register(QuantizeOp, DequantizeOp, QMatMulOp)(lambda ctx, op, g: [None] * len(op.operands))
JVP.register(QuantizeOp, DequantizeOp, QMatMulOp)(lambda ctx, op, *ts: [None])


@VMAP.register(QMatMulOp)
def _vmap_qmatmul(ctx: VmapContext, op: RlxOp, xs, batched) -> list[Tensor]:
    """A batched x folds into its rows; a batched w or bias runs once per example."""
    if batched[1] or batched[2]:
        return ctx.unroll(op, xs, batched)
    return [ctx.unfold(ctx.emit_like(op, [ctx.fold(xs[0]), *xs[1:]])[0])]


# ---------------------------------------------------------------- fake_quantize


@irdl_op_definition
class FakeQuantizeOp(RlxOp):
    """Symmetric quantise-dequantise with a straight-through gradient (module docstring)."""

    name = "rlx.fake_quantize"
    SURROGATE_GRADIENT: ClassVar[str] = "a straight-through estimate, not its derivative 0"
    x = operand_def(TensorType)
    scale = opt_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "bits": BITS_DOC, "axis": AXIS_DOC,
        "ste": "string, default identity: " + "|".join(STES) + " (the gradient estimate)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        x, *scale = types
        dtype, shape = expect_float_x(x), shape_of(x)
        q_max(attrs)
        check_ste(attrs)
        axis = channel_axis(attrs, shape)
        if scale:
            check_channel_operand(scale[0], shape, axis, "scale", dtype)
        return [x]


@irdl_op_definition
class FakeQuantizeLsqOp(RlxOp):
    """``clamp(round(x / s), -q, q) s`` with a learnable ``scale`` (LSQ)."""

    name = "rlx.fake_quantize_lsq"
    SURROGATE_GRADIENT: ClassVar[str] = "LSQ's straight-through estimates"
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"bits": BITS_DOC, "axis": AXIS_DOC}

    @classmethod
    def infer(cls, types, attrs, out):
        x, scale = types
        dtype, shape = expect_float_x(x), shape_of(x)
        q_max(attrs)
        check_channel_operand(scale, shape, channel_axis(attrs, shape), "scale", dtype)
        return [x]


OPS = [QuantizeOp, DequantizeOp, QMatMulOp, FakeQuantizeOp, FakeQuantizeLsqOp]


@INTERPRET.register(FakeQuantizeOp, FakeQuantizeLsqOp)
def _interpret_fake_quantize(op: RlxOp, x: np.ndarray, scale: np.ndarray | None = None):
    return fake_quantized(x, op_scale(op, x, scale), q_max(op.py_attrs()))


def _quant_attrs(op: RlxOp, *names: str) -> dict[str, Any]:
    attrs = op.py_attrs()
    return {k: attrs[k] for k in names if k in attrs}


@VJP.register(FakeQuantizeOp)
def _vjp_fake_quantize(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    """SPEC 5: ``identity`` passes ``g``; the other estimates are a backward op."""
    x, *scale = ctx.inputs(op)
    if op.attr("ste", "identity") == "identity":
        return [g, *([None] * len(scale))]
    dx = ctx.b.fake_quantize_backward(x, g, *scale, **_quant_attrs(op, "bits", "axis", "ste"))
    return [dx, *([None] * len(scale))]


@VJP.register(FakeQuantizeLsqOp)
def _vjp_fake_quantize_lsq(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    x, scale = ctx.inputs(op)
    attrs = _quant_attrs(op, "bits", "axis")
    return [ctx.b.fake_quantize_lsq_backward_x(x, scale, g, **attrs),
            ctx.b.fake_quantize_lsq_backward_scale(x, scale, g, **attrs)]


@JVP.register(FakeQuantizeOp)
def _jvp_fake_quantize(ctx: JvpContext, op: RlxOp, t_x, *t_scale) -> list[Tensor | None]:
    """The estimate's Jacobian is diagonal: the tangent goes through the backward op."""
    if t_x is None:
        return [None]
    if op.attr("ste", "identity") == "identity":
        return [t_x]
    x, *scale = ctx.inputs(op)
    return [ctx.b.fake_quantize_backward(x, t_x, *scale,
                                         **_quant_attrs(op, "bits", "axis", "ste"))]


@JVP.register(FakeQuantizeLsqOp)
def _jvp_fake_quantize_lsq(ctx: JvpContext, op: RlxOp, t_x, t_s) -> list[Tensor | None]:
    """The x part through the backward op; the scale part ``psi(x / s) t_s``."""
    x, scale = ctx.inputs(op)
    attrs = _quant_attrs(op, "bits", "axis")
    terms = [None if t_x is None else ctx.b.fake_quantize_lsq_backward_x(x, scale, t_x, **attrs)]
    if t_s is not None:
        keep = keep_dims_shape(x.shape, channel_axis(op.py_attrs(), x.shape))
        terms.append(lsq_psi(x, scale.reshape(keep), q_max(op.py_attrs())) * t_s.reshape(keep))
    return [ctx.add(*terms)]


def lsq_psi(x: Tensor, scale: Tensor, qmax: int) -> Tensor:
    """``d(fake_quantize_lsq)/ds`` per element: ``round(z) - z`` for ``|z| <= q``, else
    ``sign(z) q``, with ``z = x / max(s, 1e-12)``."""
    from rlx_mlir import nn

    z = x / nn.maximum(scale, MIN_SCALE)
    return nn.where(nn.abs(z) <= qmax, x.builder.round(z) - z, nn.sign(z) * float(qmax))


# ---------------------------------------------------------------- batching


def vmap_quant(ctx: VmapContext, op: RlxOp, xs, batched, data: Sequence[int],
               result_is_scale: bool = False) -> list[Tensor]:
    """The batching rule of the quantization ops. ``data`` are the operand positions
    shaped like x (the rest are per-channel: scales, zero points). A scale shared by the
    batch: the channel axis moves by one. A scale per example (a batched scale operand,
    or one computed from a batched x, or a per-example sum such as the LSQ step
    gradient): the batch axis and the channel axis fold into one channel axis, so the
    op runs once on the whole batch."""
    axis = op.attr("axis")
    rank = len(shape_of(op.operands[0].type))
    per_channel = [i for i in range(len(xs)) if i not in data]
    per_example = (any(batched[i] for i in per_channel) if per_channel else batched[0]) or (
        result_is_scale and any(batched[i] for i in data))
    if not per_example:
        moved = {} if axis is None else {"axis": norm_axis(axis, rank) + 1}
        operands = [ctx.lift(x, b) if i in data else x
                    for i, (x, b) in enumerate(zip(xs, batched, strict=True))]
        return ctx.emit_like(op, operands, **moved)
    lifted = ctx.lift_all(xs, batched)
    size = ctx.size
    if axis is None:
        operands = [x if i in data else x.reshape((size,)) for i, x in enumerate(lifted)]
        (out,) = ctx.emit_like(op, operands, axis=0)
        return [out.reshape((size, *shape_of(op.results[0].type)))] if result_is_scale \
            else [out]
    a = norm_axis(axis, rank) + 1
    perm = [0, a, *(d for d in range(1, rank + 1) if d != a)]
    channels = lifted[data[0]].shape[a]
    rest = [lifted[data[0]].shape[d] for d in perm[2:]]

    def fold(x: Tensor) -> Tensor:
        return x.transpose(perm).reshape((size * channels, *rest))

    operands = [fold(x) if i in data else x.reshape((size * channels,))
                for i, x in enumerate(lifted)]
    (out,) = ctx.emit_like(op, operands, axis=0)
    if result_is_scale:
        return [out.reshape((size, channels))]
    inverse = [perm.index(d) for d in range(rank + 1)]
    return [out.reshape((size, channels, *rest)).transpose(inverse)]


VMAP.register(QuantizeOp, DequantizeOp, FakeQuantizeOp, FakeQuantizeLsqOp)(
    lambda ctx, op, xs, batched: vmap_quant(ctx, op, xs, batched, data=[0]))


# ---------------------------------------------------------------- lowering


def lower_scale(e: Any, x: Any, scale: Any | None, axis: int | None, qmax: int) -> Any:
    """The scale as a tensor broadcastable against ``x``: the operand (floored at 1e-12)
    or the per-batch ``max(max|x| / q, 1e-12)``."""
    shape = shape_of(x.type)
    keep = keep_dims_shape(shape, axis)
    etype = x.type.element_type
    if scale is not None:
        return e.elementwise([e.reshape(scale, keep)], etype, lambda s, v: s.max(v, MIN_SCALE))
    others = [i for i in range(len(shape)) if i != axis]
    magnitude = e.elementwise([x], etype, lambda s, v: s.abs(v))
    peak = e.reduce(magnitude, others, 0.0, lambda s, v, acc: s.max(v, acc), keep_dims=True)
    return e.elementwise([peak], etype, lambda s, p: s.max(s.div(p, float(qmax)), MIN_SCALE))


def quantized_level(s: Any, x: Any, scale: Any, qmax: int) -> Any:
    """``clamp(round(x / s), -q, q)`` as a float scalar."""
    return s.min(s.max(s.round_half_away(s.div(x, scale)), float(-qmax)), float(qmax))


@LOWER.register(QuantizeOp)
def _lower_quantize(op: QuantizeOp, e: Any, x: Any, scale: Any, zero_point: Any) -> Any:
    shape = shape_of(x.type)
    keep = keep_dims_shape(shape, channel_axis(op.py_attrs(), shape))

    def body(s: Any, v: Any, sc: Any, zp: Any) -> Any:
        shift = s.cast(zp, v.type)
        level = s.add(s.round_half_away(s.div(v, sc)), shift)
        level = s.select(s.cmp("ne", level, level), shift, level)  # NaN: the zero point
        return s.cast(s.min(s.max(level, -128.0), 127.0), "i8")  # clamped before the cast

    return e.elementwise([x, e.reshape(scale, keep), e.reshape(zero_point, keep)], "i8", body)


@LOWER.register(DequantizeOp)
def _lower_dequantize(op: DequantizeOp, e: Any, q: Any, scale: Any, zero_point: Any) -> Any:
    shape = shape_of(q.type)
    keep = keep_dims_shape(shape, channel_axis(op.py_attrs(), shape))
    etype = scale.type.element_type
    return e.elementwise(
        [q, e.reshape(scale, keep), e.reshape(zero_point, keep)], etype,
        lambda s, v, sc, zp: s.mul(s.cast(s.sub(s.cast(v, "i32"), zp), etype), sc))


@LOWER.register(FakeQuantizeOp, FakeQuantizeLsqOp)
def _lower_fake_quantize(op: RlxOp, e: Any, x: Any, scale: Any | None = None) -> Any:
    attrs = op.py_attrs()
    qmax = q_max(attrs)
    s_full = lower_scale(e, x, scale, channel_axis(attrs, shape_of(x.type)), qmax)
    return e.elementwise([x, s_full], x.type.element_type,
                         lambda s, v, sc: s.mul(quantized_level(s, v, sc, qmax), sc))


@LOWER.register(QMatMulOp)
def _lower_qmatmul(op: QMatMulOp, e: Any, x: Any, w: Any, bias: Any) -> Any:
    """An i32 contraction generic (operands widened in its body), then the requantizing
    elementwise generic."""
    from xdsl.ir.affine import AffineExpr, AffineMap

    x_zp, w_zp, out_zp, mult = _qmatmul_attrs(op)
    (m, _), (_, n) = shape_of(x.type), shape_of(w.type)
    d = [AffineExpr.dimension(i) for i in range(3)]
    maps = [AffineMap(3, 0, (d[0], d[2])), AffineMap(3, 0, (d[2], d[1])),
            AffineMap(3, 0, (d[0], d[1]))]

    def body(s: Any, a: Any, b: Any, acc: Any) -> Any:
        return s.add(acc, s.mul(s.sub(s.cast(a, "i32"), x_zp), s.sub(s.cast(b, "i32"), w_zp)))

    init = e.elementwise([bias], "i32", lambda s, v: v, (m, n))
    acc = e.generic([x, w], [init], maps, ["parallel", "parallel", "reduction"], body)

    def requantize(s: Any, v: Any) -> Any:
        level = s.round_half_away(s.mul(s.cast(v, "f64"), mult))
        return s.cast(s.min(s.max(s.add(level, float(out_zp)), -128.0), 127.0), "i8")

    return e.elementwise([acc], "i8", requantize)
