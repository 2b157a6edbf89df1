"""Backward ops of the fake-quantize family (SPEC 3 rows 26-28, SPEC 3.9)::

    %dx = rlx.fake_quantize_backward %x, %dy {ste = "tanh"}
            : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %ds = rlx.fake_quantize_lsq_backward_scale %x, %s, %dy {axis = 1 : i64}
            : (tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>) -> tensor<3xf32>

They are linear in ``dy`` and differentiate only through it: the estimates themselves
are not differentiated with respect to ``x`` or the scale (a second derivative through a
straight-through estimate is zero there, as with JAX's ``x + stop_gradient(q(x) - x)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from rlx_mlir.dialects.base import RlxOp, ShapeError, shape_of
from rlx_mlir.dialects.quant import (
    AXIS_DOC,
    BITS_DOC,
    MIN_SCALE,
    STES,
    as_channels,
    channel_axis,
    check_channel_operand,
    check_ste,
    expect_float_x,
    keep_dims_shape,
    lower_scale,
    lsq_psi,
    op_scale,
    q_max,
    quantized_level,
    round_half_away,
    vmap_quant,
)
from rlx_mlir.rules import INTERPRET, JVP, LOWER, VJP, VMAP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext


def _check_like(op_name: str, x: TensorType, dy: TensorType) -> tuple[str, tuple[int, ...]]:
    dtype = expect_float_x(x)
    if dy != x:
        raise ShapeError(f"dy must have the type of x ({x}), got {dy}")
    return dtype, shape_of(x)


@irdl_op_definition
class FakeQuantizeBackwardOp(RlxOp):
    """``dx`` of ``rlx.fake_quantize`` for its ``ste`` (SPEC 3.9), with the forward scale."""

    name = "rlx.fake_quantize_backward"
    x = operand_def(TensorType)
    dy = operand_def(TensorType)
    scale = opt_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "bits": BITS_DOC, "axis": AXIS_DOC,
        "ste": "string, default identity: " + "|".join(STES),
    }

    @classmethod
    def infer(cls, types, attrs, out):
        x, dy, *scale = types
        dtype, shape = _check_like(cls.name, x, dy)
        q_max(attrs)
        check_ste(attrs)
        if scale:
            check_channel_operand(scale[0], shape, channel_axis(attrs, shape), "scale", dtype)
        return [x]


class LsqBackwardBase(RlxOp):
    x = operand_def(TensorType)
    scale = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"bits": BITS_DOC, "axis": AXIS_DOC}
    RESULT: ClassVar[str] = "x"

    @classmethod
    def infer(cls, types, attrs, out):
        x, scale, dy = types
        dtype, shape = _check_like(cls.name, x, dy)
        q_max(attrs)
        check_channel_operand(scale, shape, channel_axis(attrs, shape), "scale", dtype)
        return [x if cls.RESULT == "x" else scale]


@irdl_op_definition
class FakeQuantizeLsqBackwardXOp(LsqBackwardBase):
    """``dx = dy [|x / s| <= q]`` (SPEC 3 row 27)."""

    name = "rlx.fake_quantize_lsq_backward_x"


@irdl_op_definition
class FakeQuantizeLsqBackwardScaleOp(LsqBackwardBase):
    """``ds[c] = sum psi(x / s) dy`` over channel c (SPEC 3 row 28; no gradient scale)."""

    name = "rlx.fake_quantize_lsq_backward_scale"
    RESULT: ClassVar[str] = "scale"


OPS = [FakeQuantizeBackwardOp, FakeQuantizeLsqBackwardXOp, FakeQuantizeLsqBackwardScaleOp]


# ---------------------------------------------------------------- interpreter


def _clipped(s: Any, v: Any, sc: Any, qmax: int) -> Any:
    """1 where ``x``'s level ``round(x / s)`` is in range (as torch's mask): ``|x| <= q s``
    dropped the largest element when ``q * fl(max|x| / q)`` rounded below ``max|x|``."""
    level = s.abs(s.round_half_away(s.div(v, sc)))
    return s.select(s.cmp("le", level, float(qmax)), s.scalar(1.0, v.type), 0.0)


def _tanh_slope(s: Any, v: Any, sc: Any, qmax: int) -> Any:
    t = s.tanh(s.div(v, sc))
    return s.sub(1.0, s.mul(t, t))


def _hard_tanh_slope(s: Any, v: Any, sc: Any, qmax: int) -> Any:
    return s.max(s.sub(1.0, s.div(s.abs(v), s.mul(sc, float(qmax)))), 0.0)


STE_FACTORS: dict[str, tuple[Callable[..., np.ndarray], Callable[..., Any]]] = {
    "identity": (lambda x, s, q: np.ones_like(x), lambda e, v, sc, q: 1.0),
    "clipped_identity": (lambda x, s, q: np.abs(round_half_away(x / s)) <= q, _clipped),
    "tanh": (lambda x, s, q: 1 - np.tanh(x / s) ** 2, _tanh_slope),
    "hard_tanh": (lambda x, s, q: np.maximum(0, 1 - np.abs(x) / (q * s)), _hard_tanh_slope),
}
"""``ste`` -> ``dx / dy`` of the estimate: its numpy form ``(x, s, q)`` and its scalar
emitter form ``(s, x, scale, q)`` (SPEC 3.9)."""


@INTERPRET.register(FakeQuantizeBackwardOp)
def _interpret_backward(op: RlxOp, x: np.ndarray, dy: np.ndarray,
                        scale: np.ndarray | None = None) -> np.ndarray:
    attrs = op.py_attrs()
    s = op_scale(op, x, scale)
    factor = STE_FACTORS[check_ste(attrs)][0](x, s, q_max(attrs))
    return (dy * factor).astype(x.dtype)


def _lsq_z(op: RlxOp, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    axis = channel_axis(op.py_attrs(), x.shape)
    return x / np.maximum(as_channels(scale, x.shape, axis), x.dtype.type(MIN_SCALE))


@INTERPRET.register(FakeQuantizeLsqBackwardXOp)
def _interpret_lsq_x(op: RlxOp, x, scale, dy) -> np.ndarray:
    inside = np.abs(_lsq_z(op, x, scale)) <= q_max(op.py_attrs())
    return (dy * inside).astype(x.dtype)


@INTERPRET.register(FakeQuantizeLsqBackwardScaleOp)
def _interpret_lsq_scale(op: RlxOp, x, scale, dy) -> np.ndarray:
    qmax, z = q_max(op.py_attrs()), _lsq_z(op, x, scale)
    psi = np.where(np.abs(z) <= qmax, round_half_away(z) - z, np.sign(z) * qmax)
    axis = channel_axis(op.py_attrs(), x.shape)
    others = tuple(i for i in range(x.ndim) if i != axis)
    return np.sum(psi * dy, axis=others).reshape(scale.shape).astype(scale.dtype)


# ---------------------------------------------------------------- VJP / JVP (linear in dy)


@VJP.register(FakeQuantizeBackwardOp)
def _vjp_backward(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    x, _, *scale = ctx.inputs(op)
    dy = ctx.b.fake_quantize_backward(x, g, *scale, **op.py_attrs())
    return [None, dy, *([None] * len(scale))]


@VJP.register(FakeQuantizeLsqBackwardXOp)
def _vjp_lsq_x(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    x, scale, _ = ctx.inputs(op)
    return [None, None, ctx.b.fake_quantize_lsq_backward_x(x, scale, g, **op.py_attrs())]


@VJP.register(FakeQuantizeLsqBackwardScaleOp)
def _vjp_lsq_scale(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    """``ds = sum psi dy``: dy gets ``psi g`` (g broadcast over the channel's elements)."""
    x, scale, _ = ctx.inputs(op)
    keep = keep_dims_shape(x.shape, channel_axis(op.py_attrs(), x.shape))
    return [None, None, lsq_psi(x, scale.reshape(keep), q_max(op.py_attrs())) * g.reshape(keep)]


@JVP.register(*OPS)
def _jvp_linear_in_dy(ctx: JvpContext, op: RlxOp, *tangents) -> list[Tensor | None]:
    dy_index = 1 if isinstance(op, FakeQuantizeBackwardOp) else 2
    t = tangents[dy_index]
    if t is None:
        return [None]
    operands = list(ctx.inputs(op))
    operands[dy_index] = t
    return [ctx.b.emit(op.name.removeprefix("rlx."), *operands, **op.py_attrs())]


VMAP.register(FakeQuantizeBackwardOp)(
    lambda ctx, op, xs, batched: vmap_quant(ctx, op, xs, batched, data=[0, 1]))
VMAP.register(FakeQuantizeLsqBackwardXOp)(
    lambda ctx, op, xs, batched: vmap_quant(ctx, op, xs, batched, data=[0, 2]))
VMAP.register(FakeQuantizeLsqBackwardScaleOp)(
    lambda ctx, op, xs, batched: vmap_quant(ctx, op, xs, batched, data=[0, 2],
                                            result_is_scale=True))


# ---------------------------------------------------------------- lowering


@LOWER.register(FakeQuantizeBackwardOp)
def _lower_backward(op: RlxOp, e: Any, x: Any, dy: Any, scale: Any | None = None) -> Any:
    attrs = op.py_attrs()
    qmax = q_max(attrs)
    s_full = lower_scale(e, x, scale, channel_axis(attrs, shape_of(x.type)), qmax)
    factor = STE_FACTORS[check_ste(attrs)][1]
    return e.elementwise([x, dy, s_full], x.type.element_type,
                         lambda s, v, g, sc: s.mul(g, factor(s, v, sc, qmax)))


def _lsq_parts(op: RlxOp, e: Any, x: Any, scale: Any):
    attrs = op.py_attrs()
    axis = channel_axis(attrs, shape_of(x.type))
    return q_max(attrs), axis, lower_scale(e, x, scale, axis, q_max(attrs))


@LOWER.register(FakeQuantizeLsqBackwardXOp)
def _lower_lsq_x(op: RlxOp, e: Any, x: Any, scale: Any, dy: Any) -> Any:
    qmax, _, s_full = _lsq_parts(op, e, x, scale)
    return e.elementwise([x, dy, s_full], x.type.element_type, lambda s, v, g, sc: s.select(
        s.cmp("le", s.abs(s.div(v, sc)), float(qmax)), g, 0.0))


@LOWER.register(FakeQuantizeLsqBackwardScaleOp)
def _lower_lsq_scale(op: RlxOp, e: Any, x: Any, scale: Any, dy: Any) -> Any:
    qmax, axis, s_full = _lsq_parts(op, e, x, scale)

    def psi_dy(s: Any, v: Any, g: Any, sc: Any) -> Any:
        z = s.div(v, sc)
        inside = s.sub(quantized_level(s, v, sc, qmax), z)  # round(z) - z where |z| <= q
        outside = s.copysign(float(qmax), z)
        return s.mul(s.select(s.cmp("le", s.abs(z), float(qmax)), inside, outside), g)

    terms = e.elementwise([x, dy, s_full], x.type.element_type, psi_dy)
    shape = shape_of(x.type)
    summed = e.reduce(terms, [i for i in range(len(shape)) if i != axis], 0.0,
                      lambda s, v, acc: s.add(v, acc))
    return e.reshape(summed, shape_of(op.results[0].type))
