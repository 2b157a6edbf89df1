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

from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    expect_float,
    expect_same_dtype,
    require,
    shape_of,
)
from rlx_mlir.dialects.elementwise import ACTIVATIONS, _erf, _sigmoid
from rlx_mlir.rules import INTERPRET


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


@irdl_op_definition
class ActivationBackwardOp(RlxOp):
    """``dx = f'(x) * dy`` for activation ``kind`` (SPEC 3.1 table).

    Sqrt and rsqrt have gradient 0 at x <= 0, abs has 0 at 0, round is
    straight-through (gradient 1).
    """

    name = "rlx.activation_backward"
    x = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"kind": "string: the activation (relu, gelu, ...)"}

    @classmethod
    def infer(cls, types, attrs, out):
        kind = require(attrs, "kind", str)
        if kind not in DERIVATIVES:
            raise ShapeError(f"unknown activation kind '{kind}' "
                             f"(expected one of {', '.join(sorted(DERIVATIVES))})")
        return _check_pair(cls, types)


@INTERPRET.register(ActivationBackwardOp)
def _interpret_activation_backward(op, x: np.ndarray, dy: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return DERIVATIVES[op.attr("kind")](x) * dy


OPS = [ReluBackwardOp, ActivationBackwardOp]
