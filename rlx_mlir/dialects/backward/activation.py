"""Activation backward ops (SPEC 3.1): ``dx = f'(x) * dy``, recomputed from the input x.

    %dx = rlx.relu_backward %x, %dy : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %dx = rlx.activation_backward %x, %dy {kind = "gelu"} : (...) -> tensor<4xf32>
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    expect_float,
    expect_same_dtype,
    optional,
    require,
    shape_of,
)
from rlx_mlir.dialects.elementwise import ACTIVATIONS, _erf, _sigmoid, lower_trig, trig
from rlx_mlir.rules import INTERPRET, JVP, VJP, VMAP


def _check_pair(cls, types) -> list[TensorType]:
    expect_same_dtype(types, f"'{cls.name}' operands")
    expect_float(types[0], "x")
    if shape_of(types[0]) != shape_of(types[1]):
        raise ShapeError(f"x and dy must have equal shapes, got {types[0]} and {types[1]}")
    return [types[0]]


@irdl_op_definition
class ReluBackwardOp(RlxOp):
    """``dx = dy if x > 0 else 0`` (the gradient at exactly 0 is 0)."""

    name = "rlx.relu_backward"
    x = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, attrs, out):
        return _check_pair(cls, types)


@INTERPRET.register(ReluBackwardOp)
def _interpret_relu_backward(op, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    return np.where(x > 0, dy, 0)


def _gelu_derivative(x: np.ndarray) -> np.ndarray:
    cdf = 0.5 * (1.0 + _erf(x / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return cdf + x * pdf


def _gelu_approx_derivative(x: np.ndarray) -> np.ndarray:
    c = math.sqrt(2.0 / math.pi)
    t = np.tanh(c * (x + 0.044715 * x**3))
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x * x)


def _positive_or_zero(x: np.ndarray, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    safe = np.where(x > 0, x, 1)
    return np.where(x > 0, fn(safe), 0)


DERIVATIVES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": lambda x: (x > 0).astype(x.dtype),
    "sigmoid": lambda x: _sigmoid(x) * (1 - _sigmoid(x)),
    "tanh": lambda x: 1 - np.tanh(x) ** 2,
    "silu": lambda x: _sigmoid(x) * (1 + x * (1 - _sigmoid(x))),
    "gelu": _gelu_derivative,
    "gelu_approx": _gelu_approx_derivative,
    "exp": np.exp,
    "log": lambda x: 1 / x,
    "sqrt": lambda x: _positive_or_zero(x, lambda s: 0.5 / np.sqrt(s)),
    "rsqrt": lambda x: _positive_or_zero(x, lambda s: -0.5 * s**-1.5),
    "neg": lambda x: -np.ones_like(x),
    "abs": np.sign,
    "sin": np.cos,
    "cos": lambda x: -np.sin(x),
    "tan": lambda x: 1 + np.tan(x) ** 2,
    "atan": lambda x: 1 / (1 + x * x),
    "round": np.ones_like,  # straight-through estimator
}
assert set(DERIVATIVES) == set(ACTIVATIONS)


def _gelu_second(x: np.ndarray) -> np.ndarray:
    return np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi) * (2.0 - x * x)


def _gelu_approx_second(x: np.ndarray) -> np.ndarray:
    c, a = math.sqrt(2.0 / math.pi), 0.044715
    t = np.tanh(c * (x + a * x**3))
    du = c * (1 + 3 * a * x * x)
    sech2 = 1 - t * t
    return sech2 * du - x * t * sech2 * du * du + 3 * a * c * x * x * sech2


SECOND_DERIVATIVES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": np.zeros_like,
    "sigmoid": lambda x: _sigmoid(x) * (1 - _sigmoid(x)) * (1 - 2 * _sigmoid(x)),
    "tanh": lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
    "silu": lambda x: _sigmoid(x) * (1 - _sigmoid(x)) * (2 + x * (1 - 2 * _sigmoid(x))),
    "gelu": _gelu_second,
    "gelu_approx": _gelu_approx_second,
    "exp": np.exp,
    "log": lambda x: -1 / (x * x),
    "sqrt": lambda x: _positive_or_zero(x, lambda s: -0.25 * s**-1.5),
    "rsqrt": lambda x: _positive_or_zero(x, lambda s: 0.75 * s**-2.5),
    "neg": np.zeros_like,
    "abs": np.zeros_like,
    "sin": lambda x: -np.sin(x),
    "cos": lambda x: -np.cos(x),
    "tan": lambda x: 2 * np.tan(x) * (1 + np.tan(x) ** 2),
    "atan": lambda x: -2 * x / (1 + x * x) ** 2,
    "round": np.zeros_like,
}
assert set(SECOND_DERIVATIVES) == set(ACTIVATIONS)
ORDERS = {1: DERIVATIVES, 2: SECOND_DERIVATIVES}


@irdl_op_definition
class ActivationBackwardOp(RlxOp):
    """``dx = f'(x) * dy`` for activation ``kind`` (SPEC 3.1 table); with ``order = 2``
    ``f''(x) * dy`` (no derivative rule: autodiff builds second derivatives from
    differentiable ops instead, so derivatives of any order compose).

    Sqrt and rsqrt have gradient 0 at x <= 0, abs has 0 at 0, round is
    straight-through (gradient 1).
    """

    name = "rlx.activation_backward"
    x = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "kind": "string: the activation (relu, gelu, ...)",
        "order": "i64, 1 (default) for f', 2 for f''",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        kind = require(attrs, "kind", str)
        if optional(attrs, "order", int, 1) not in ORDERS:
            raise ShapeError(f"order must be 1 or 2, got {attrs['order']}")
        if kind not in DERIVATIVES:
            raise ShapeError(f"unknown activation kind '{kind}' "
                             f"(expected one of {', '.join(sorted(DERIVATIVES))})")
        return _check_pair(cls, types)


@INTERPRET.register(ActivationBackwardOp)
def _interpret_activation_backward(op, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return ORDERS[op.attr("order", 1)][op.attr("kind")](x) * dy


VMAP.register(ReluBackwardOp, ActivationBackwardOp)(
    lambda ctx, op, xs, batched: ctx.same_shape(op, xs, batched))


@JVP.register(ReluBackwardOp)
def _jvp_relu_backward(ctx, op, tx, tdy):
    """Linear in dy; the derivative in x is zero almost everywhere."""
    x, _ = ctx.inputs(op)
    return [None if tdy is None else ctx.b.relu_backward(x, tdy)]


@VJP.register(ReluBackwardOp)
def _vjp_relu_backward(ctx, op, g):
    x, _ = ctx.inputs(op)
    return [None, ctx.b.relu_backward(x, g)]


def _first_order_only(op) -> None:
    if op.attr("order", 1) != 1:
        raise RlxError("the derivative of an order-2 activation_backward is not supported "
                       "(autodiff never emits one: its second derivatives are built from "
                       "differentiable ops)", op=op)


def _safe_positive(b, x):
    """``x`` where ``x > 0``, else 1 (a divisor whose unused branch stays finite)."""
    return b.where(x > 0.0, x, x * 0.0 + 1.0)


def _gelu_approx_second_of(b, x, m):
    t = b.tanh((x + x * x * x * _GELU_A) * _GELU_C)
    du = (x * x * (3 * _GELU_A) + 1.0) * _GELU_C
    sech2 = 1.0 - t * t
    return (sech2 * du - x * t * sech2 * du * du + x * x * sech2 * (3 * _GELU_A * _GELU_C)) * m


SECOND_COMPOSITES: dict[str, Callable | None] = {
    "relu": None, "neg": None, "abs": None, "round": None,  # f'' = 0
    "tanh": lambda b, x, m, d1: d1(m) * b.tanh(x) * -2.0,
    "sigmoid": lambda b, x, m, d1: d1(m) * (1.0 - b.sigmoid(x) * 2.0),
    "silu": lambda b, x, m, d1: (b.activation_backward(x, m, kind="sigmoid")
                                 * (x * (1.0 - b.sigmoid(x) * 2.0) + 2.0)),
    "gelu": lambda b, x, m, d1: (b.exp(x * x * -0.5) * _INV_SQRT_2PI * (2.0 - x * x)) * m,
    "gelu_approx": lambda b, x, m, d1: _gelu_approx_second_of(b, x, m),
    "exp": lambda b, x, m, d1: b.exp(x) * m,
    "log": lambda b, x, m, d1: -m / (x * x),
    "sqrt": lambda b, x, m, d1: d1(m) * -0.5 / _safe_positive(b, x),
    "rsqrt": lambda b, x, m, d1: d1(m) * -1.5 / _safe_positive(b, x),
    "sin": lambda b, x, m, d1: -b.sin(x) * m,
    "cos": lambda b, x, m, d1: -b.cos(x) * m,
    "tan": lambda b, x, m, d1: d1(m) * b.tan(x) * 2.0,
    "atan": lambda b, x, m, d1: d1(d1(m)) * x * -2.0,
}
"""The second derivative times ``m`` of each activation, from rlx ops and first-order
``activation_backward`` (``d1(v)`` is the first derivative times ``v``), so derivatives of
every order compose from the ops' own rules: an order-2 op would need a third-derivative
rule for each kind (PINN losses, jacfwd of hessian). None: the second derivative is 0.
E.g. tanh'' = -2 tanh(x) tanh'(x)."""
assert set(SECOND_COMPOSITES) == set(ACTIVATIONS)


def second_derivative_times(ctx, x, m, kind: str):
    """The second derivative of ``kind`` at ``x`` times ``m``, as differentiable ops
    (None when it is zero)."""
    rule = SECOND_COMPOSITES[kind]
    if rule is None:
        return None
    return rule(ctx.b, x, m, lambda v: ctx.b.activation_backward(x, v, kind=kind))


@JVP.register(ActivationBackwardOp)
def _jvp_activation_backward(ctx, op, tx, tdy):
    """``f''(x) dy tx + f'(x) tdy``."""
    _first_order_only(op)
    x, dy = ctx.inputs(op)
    kind = op.attr("kind")
    in_x = None if tx is None else second_derivative_times(ctx, x, dy * tx, kind)
    in_dy = None if tdy is None else ctx.b.activation_backward(x, tdy, kind=kind)
    return [ctx.add(in_x, in_dy)]


@VJP.register(ActivationBackwardOp)
def _vjp_activation_backward(ctx, op, g):
    """x gets ``f''(x) dy g``; dy gets ``f'(x) g``."""
    _first_order_only(op)
    x, dy = ctx.inputs(op)
    kind = op.attr("kind")
    return [second_derivative_times(ctx, x, dy * g, kind),
            ctx.b.activation_backward(x, g, kind=kind)]


OPS = [ReluBackwardOp, ActivationBackwardOp]


# ---------------------------------------------------------------- LOWER rules
# ``dx = f'(x) * dy`` as one parallel generic; each derivative body repeats the
# interpreter's formula above (DERIVATIVES), so NaN/inf and the x <= 0 guards agree.

from typing import Any  # noqa: E402

from rlx_mlir.rules import LOWER  # noqa: E402

_SQRT_2 = math.sqrt(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
# lowered as products by the reciprocals (a division costs ~10x a multiply in vector code)
_INV_SQRT_2 = 1.0 / _SQRT_2
_INV_SQRT_2PI = 1.0 / _SQRT_2PI
_GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


def _sigmoid_prime(s: Any, x: Any) -> Any:
    sig = s.sigmoid(x)
    return s.mul(sig, s.sub(1.0, sig))


def _silu_prime(s: Any, x: Any) -> Any:
    sig = s.sigmoid(x)
    return s.mul(sig, s.add(1.0, s.mul(x, s.sub(1.0, sig))))


def _tanh_prime(s: Any, x: Any) -> Any:
    t = s.tanh(x)
    return s.sub(1.0, s.mul(t, t))


def _gelu_prime(s: Any, x: Any) -> Any:
    """``cdf + x * pdf`` with the exact (erf) normal cdf."""
    cdf = s.mul(s.add(s.erf(s.mul(x, _INV_SQRT_2)), 1.0), 0.5)
    pdf = s.mul(s.exp(s.mul(s.mul(x, -0.5), x)), _INV_SQRT_2PI)
    return s.add(cdf, s.mul(x, pdf))


def _gelu_approx_prime(s: Any, x: Any) -> Any:
    square = s.mul(x, x)
    t = s.tanh(s.mul(s.add(x, s.mul(s.mul(square, x), _GELU_A)), _GELU_C))
    outer = s.mul(s.add(t, 1.0), 0.5)
    slope = s.mul(s.mul(s.mul(s.mul(x, 0.5), s.sub(1.0, s.mul(t, t))), _GELU_C),
                  s.add(s.mul(square, 3 * _GELU_A), 1.0))
    return s.add(outer, slope)


def _positive_or_zero_prime(fn: Any) -> Any:
    """``fn(x)`` where ``x > 0``, else 0 (NaN too); ``fn`` only ever sees positive input."""
    def body(s: Any, x: Any) -> Any:
        positive = s.cmp("gt", x, 0.0)
        return s.select(positive, fn(s, s.select(positive, x, 1.0)), 0.0)
    return body


def _sign(s: Any, x: Any) -> Any:
    """``np.sign``: -1, 0 or 1 (``x * 0`` keeps zeros and NaN)."""
    return s.select(s.cmp("gt", x, 0.0), 1.0,
                    s.select(s.cmp("lt", x, 0.0), -1.0, s.mul(x, 0.0)))


def _tan_prime(s: Any, x: Any) -> Any:
    t = s.tan(x)
    return s.add(s.mul(t, t), 1.0)


_DERIVATIVE_BODIES: dict[str, Any] = {
    "relu": lambda s, x: s.select(s.cmp("gt", x, 0.0), s.scalar(1.0, x.type), 0.0),
    "sigmoid": _sigmoid_prime,
    "tanh": _tanh_prime,
    "silu": _silu_prime,
    "gelu": _gelu_prime,
    "gelu_approx": _gelu_approx_prime,
    "exp": lambda s, x: s.exp(x),
    "log": lambda s, x: s.div(1.0, x),
    "sqrt": _positive_or_zero_prime(lambda s, x: s.div(0.5, s.sqrt(x))),
    "rsqrt": _positive_or_zero_prime(lambda s, x: s.mul(s.pow(x, -1.5), -0.5)),
    "neg": lambda s, x: s.scalar(-1.0, x.type),
    "abs": _sign,
    "sin": lambda s, x: s.cos(x),
    "cos": lambda s, x: s.neg(s.sin(x)),
    "tan": _tan_prime,
    "atan": lambda s, x: s.div(1.0, s.add(s.mul(x, x), 1.0)),
    "round": lambda s, x: s.scalar(1.0, x.type),
}
assert set(_DERIVATIVE_BODIES) == set(DERIVATIVES)


@LOWER.register(ReluBackwardOp)
def _lower_relu_backward(op: ReluBackwardOp, e: Any, x: Any, dy: Any) -> Any:
    return e.elementwise([x, dy], x.type.element_type,
                         lambda s, v, g: s.select(s.cmp("gt", v, 0.0), g, 0.0))


def _sigmoid_second(s: Any, x: Any) -> Any:
    sig = s.sigmoid(x)
    return s.mul(s.mul(sig, s.sub(1.0, sig)), s.sub(1.0, s.mul(sig, 2.0)))


def _silu_second(s: Any, x: Any) -> Any:
    sig = s.sigmoid(x)
    slope = s.mul(sig, s.sub(1.0, sig))
    return s.mul(slope, s.add(2.0, s.mul(x, s.sub(1.0, s.mul(sig, 2.0)))))


def _gelu_second_body(s: Any, x: Any) -> Any:
    pdf = s.mul(s.exp(s.mul(s.mul(x, -0.5), x)), _INV_SQRT_2PI)
    return s.mul(pdf, s.sub(2.0, s.mul(x, x)))


def _gelu_approx_second_body(s: Any, x: Any) -> Any:
    square = s.mul(x, x)
    t = s.tanh(s.mul(s.add(x, s.mul(s.mul(square, x), _GELU_A)), _GELU_C))
    sech2 = s.sub(1.0, s.mul(t, t))
    du = s.mul(s.add(s.mul(square, 3 * _GELU_A), 1.0), _GELU_C)
    first = s.mul(sech2, du)
    second = s.mul(s.mul(s.mul(x, t), sech2), s.mul(du, du))
    third = s.mul(s.mul(square, sech2), 3 * _GELU_A * _GELU_C)
    return s.add(s.sub(first, second), third)


def _zero(s: Any, x: Any) -> Any:
    return s.scalar(0.0, x.type)


_SECOND_DERIVATIVE_BODIES: dict[str, Any] = {
    "relu": _zero, "neg": _zero, "abs": _zero, "round": _zero,
    "sigmoid": _sigmoid_second,
    "tanh": lambda s, x: s.mul(s.mul(s.tanh(x), -2.0), _tanh_prime(s, x)),
    "silu": _silu_second,
    "gelu": _gelu_second_body,
    "gelu_approx": _gelu_approx_second_body,
    "exp": lambda s, x: s.exp(x),
    "log": lambda s, x: s.div(-1.0, s.mul(x, x)),
    "sqrt": _positive_or_zero_prime(lambda s, x: s.mul(s.pow(x, -1.5), -0.25)),
    "rsqrt": _positive_or_zero_prime(lambda s, x: s.mul(s.pow(x, -2.5), 0.75)),
    "sin": lambda s, x: s.neg(s.sin(x)),
    "cos": lambda s, x: s.neg(s.cos(x)),
    "tan": lambda s, x: s.mul(s.mul(s.tan(x), 2.0), _tan_prime(s, x)),
    "atan": lambda s, x: s.div(s.mul(x, -2.0),
                               s.mul(s.add(s.mul(x, x), 1.0), s.add(s.mul(x, x), 1.0))),
}
assert set(_SECOND_DERIVATIVE_BODIES) == set(SECOND_DERIVATIVES)
_BODIES_BY_ORDER = {1: _DERIVATIVE_BODIES, 2: _SECOND_DERIVATIVE_BODIES}


_TRIG_DERIVATIVES: dict[tuple[str, int], tuple[bool, float]] = {
    ("sin", 1): (True, 1.0), ("cos", 1): (False, -1.0),
    ("sin", 2): (False, -1.0), ("cos", 2): (True, -1.0),
}
"""(kind, order) -> the derivative as ``sign * (cos if cosine else sin)(x)``."""


@LOWER.register(ActivationBackwardOp)
def _lower_activation_backward(op: ActivationBackwardOp, e: Any, x: Any, dy: Any) -> Any:
    order, kind = op.attr("order", 1), op.attr("kind")
    derivative = _BODIES_BY_ORDER[order][kind]

    def exact(s: Any, v: Any, g: Any) -> Any:
        return s.mul(derivative(s, v), g)

    if (kind, order) not in _TRIG_DERIVATIVES:
        return e.elementwise([x, dy], x.type.element_type, exact)
    cosine, sign = _TRIG_DERIVATIVES[kind, order]
    return lower_trig(e, x, [x, dy],
                      lambda s, v, g: s.mul(s.mul(trig(s, v, cosine), sign), g), exact)
