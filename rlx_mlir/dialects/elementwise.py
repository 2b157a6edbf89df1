"""Elementwise family: binary arithmetic, activations, compare, where, cast,
stop_gradient and constant (SPEC 2.1.1-2.1.6).

Binary ops, compare and where follow NumPy broadcasting::

    %z = rlx.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %p = rlx.compare %x, %y {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir.affine import AffineMap
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    COMPLEX_DTYPES,
    FLOAT_DTYPES,
    REAL_FLOAT_DTYPES,
    RlxOp,
    ShapeError,
    broadcast_shapes,
    define_op,
    dtype_of,
    expect_same_dtype,
    from_attr,
    is_real_float,
    numpy_dtype,
    require,
    shape_of,
    tensor,
)
from rlx_mlir.rules import INTERPRET, JVP, VJP, VMAP, no_gradient

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext

# ---------------------------------------------------------------- binary


class BinaryOp(RlxOp):
    """``lhs op rhs`` with NumPy broadcasting; both operands share a dtype."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    DTYPES: ClassVar[tuple[str, ...]] = ("f32", "f64", "i32", "i64")
    NUMPY_FN: ClassVar[Callable[[np.ndarray, np.ndarray], np.ndarray]]
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_same_dtype(types, f"'{cls.name}' operands")
        if dtype not in cls.DTYPES:
            raise ShapeError(f"'{cls.name}' does not support element type {dtype}")
        return [tensor(broadcast_shapes(shape_of(types[0]), shape_of(types[1])), dtype)]


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division truncating toward zero; division by zero yields 0 (SPEC 2.1.1).
    Exact in integer arithmetic (no round trip through f64, which loses i64 digits);
    ``INT_MIN / -1`` wraps to ``INT_MIN``, as numpy."""
    safe = np.where(b == 0, 1, b).astype(a.dtype)
    q = np.floor_divide(a, safe)
    q = q + ((q * safe != a) & ((a < 0) != (safe < 0))).astype(a.dtype)
    return np.where(b == 0, 0, q).astype(a.dtype)


def _pow(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "i":
        return np.power(a, np.maximum(b, 0))
    return np.power(a, b)


def _binary(name: str, fn: Callable, doc: str, dtypes: tuple[str, ...] | None = None):
    extra = {"DTYPES": dtypes} if dtypes else {}
    class_name = name.split(".")[1].title() + "Op"
    return define_op(class_name, BinaryOp, name, doc, NUMPY_FN=staticmethod(fn), **extra)


AddOp = _binary("rlx.add", np.add, "Elementwise ``lhs + rhs``.", ("f32", "f64", "i32", "i64", "c64", "c128"))
SubOp = _binary("rlx.sub", np.subtract, "Elementwise ``lhs - rhs``.", ("f32", "f64", "i32", "i64", "c64", "c128"))
MulOp = _binary("rlx.mul", np.multiply, "Elementwise ``lhs * rhs``.", ("f32", "f64", "i32", "i64", "c64", "c128"))
DivOp = _binary(
    "rlx.div",
    lambda a, b: _int_div(a, b) if a.dtype.kind == "i" else np.divide(a, b),
    "Elementwise ``lhs / rhs`` (integer division by zero gives 0).",
    ("f32", "f64", "i32", "i64", "c64", "c128"),
)
MinOp = _binary("rlx.min", np.minimum, "Elementwise minimum.")
MaxOp = _binary("rlx.max", np.maximum, "Elementwise maximum.")
PowOp = _binary("rlx.pow", _pow, "Elementwise ``lhs ** rhs`` (integer exponents clamp at 0).")
BINARY_OPS = (AddOp, SubOp, MulOp, DivOp, MinOp, MaxOp, PowOp)


@INTERPRET.register(*BINARY_OPS)
def _interpret_binary(op: BinaryOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return type(op).NUMPY_FN(a, b)


# ---------------------------------------------------------------- activations


class UnaryOp(RlxOp):
    """An elementwise activation ``y = f(x)`` (same shape and dtype)."""

    x = operand_def(TensorType)
    result = result_def(TensorType)

    DTYPES: ClassVar[tuple[str, ...]] = FLOAT_DTYPES
    NUMPY_FN: ClassVar[Callable[[np.ndarray], np.ndarray]]
    FORMULA: ClassVar[str] = ""
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = dtype_of(types[0])
        if dtype not in cls.DTYPES:
            raise ShapeError(
                f"'{cls.name}' does not support element type {dtype} "
                f"(supported: {', '.join(cls.DTYPES)})"
            )
        return [types[0]]


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-x))`` without overflow or cancellation in either tail."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(x.dtype))


def _gelu_approx(x: np.ndarray) -> np.ndarray:
    c = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + np.tanh(c * (x + 0.044715 * x**3)))


def round_half_away(x: np.ndarray) -> np.ndarray:
    """Round half away from zero, exactly: ``floor(|x| + 0.5)`` would round 0.49999997
    up (the add rounds to 1.0)."""
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t).astype(x.dtype)


ACTIVATIONS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "relu": (lambda x: np.maximum(x, 0), "max(0, x)"),
    "sigmoid": (_sigmoid, "1 / (1 + exp(-x))"),
    "tanh": (np.tanh, "tanh(x)"),
    "silu": (lambda x: x * _sigmoid(x), "x * sigmoid(x)"),
    "gelu": (_gelu, "x/2 * (1 + erf(x / sqrt(2))) (exact)"),
    "gelu_approx": (_gelu_approx, "x/2 * (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))"),
    "exp": (np.exp, "exp(x)"),
    "log": (np.log, "ln(x)"),
    "sqrt": (np.sqrt, "sqrt(x)"),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), "1 / sqrt(x)"),
    "neg": (np.negative, "-x"),
    "abs": (np.abs, "|x|"),
    "sin": (np.sin, "sin(x)"),
    "cos": (np.cos, "cos(x)"),
    "tan": (np.tan, "tan(x)"),
    "atan": (np.arctan, "atan(x)"),
    "round": (round_half_away, "round half away from zero"),
}
SURROGATE_GRADIENTS = {"round": "straight-through: gradient 1, not its derivative 0"}
"""Activations whose gradient is by design not their derivative: gradient checks against
finite differences leave the arguments whose gradient flows through them unchecked."""
# Complex inputs are allowed for the activations with a natural extension (SPEC 2.1.2).
_COMPLEX_OK = {"neg", "exp", "log", "sqrt"}
_INT_OK = {"neg", "abs"}


def _activation(kind: str):
    fn, formula = ACTIVATIONS[kind]
    dtypes = FLOAT_DTYPES + (COMPLEX_DTYPES if kind in _COMPLEX_OK else ()) + (
        ("i32", "i64") if kind in _INT_OK else ()
    )
    class_name = "".join(p.title() for p in kind.split("_")) + "Op"
    return define_op(
        class_name, UnaryOp, f"rlx.{kind}", f"Elementwise ``{formula}``.",
        NUMPY_FN=staticmethod(fn), FORMULA=formula, DTYPES=dtypes,
        SURROGATE_GRADIENT=SURROGATE_GRADIENTS.get(kind),
    )


ACTIVATION_OPS: dict[str, type[UnaryOp]] = {k: _activation(k) for k in ACTIVATIONS}
globals().update({cls.__name__: cls for cls in ACTIVATION_OPS.values()})
ReluOp = ACTIVATION_OPS["relu"]
ExpOp = ACTIVATION_OPS["exp"]
LogOp = ACTIVATION_OPS["log"]
NegOp = ACTIVATION_OPS["neg"]


@INTERPRET.register(*ACTIVATION_OPS.values())
def _interpret_activation(op: UnaryOp, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return type(op).NUMPY_FN(x)


# ---------------------------------------------------------------- compare / where

PREDICATES: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "eq": np.equal, "ne": np.not_equal, "lt": np.less,
    "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
}


@irdl_op_definition
class CompareOp(RlxOp):
    """``lhs <predicate> rhs`` elementwise with broadcasting; an i1 predicate.

    ``predicate`` is one of eq, ne, lt, le, gt, ge. Not differentiable.
    """

    name = "rlx.compare"
    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"predicate": "string: eq|ne|lt|le|gt|ge"}

    @classmethod
    def infer(cls, types, attrs, out):
        pred = require(attrs, "predicate", str)
        if pred not in PREDICATES:
            raise ShapeError(
                f"unknown predicate '{pred}' (expected one of {', '.join(PREDICATES)})"
            )
        dtype = expect_same_dtype(types, "'rlx.compare' operands")
        if dtype in COMPLEX_DTYPES and pred not in ("eq", "ne"):
            raise ShapeError(f"complex numbers are not ordered: predicate '{pred}' on {dtype} "
                             "(only eq and ne)")
        return [tensor(broadcast_shapes(shape_of(types[0]), shape_of(types[1])), "i1")]


@INTERPRET.register(CompareOp)
def _interpret_compare(op: CompareOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return PREDICATES[op.attr("predicate")](a, b)


@irdl_op_definition
class WhereOp(RlxOp):
    """``cond ? on_true : on_false`` elementwise, all three broadcast together.

    ``cond`` is i1 (or a numeric tensor where nonzero means true).
    """

    name = "rlx.where"
    cond = operand_def(TensorType)
    on_true = operand_def(TensorType)
    on_false = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        dtype = expect_same_dtype(types[1:], "'rlx.where' values")
        shape = broadcast_shapes(shape_of(types[0]), shape_of(types[1]))
        return [tensor(broadcast_shapes(shape, shape_of(types[2])), dtype)]


@INTERPRET.register(WhereOp)
def _interpret_where(op: WhereOp, c: np.ndarray, t: np.ndarray, f: np.ndarray):
    return np.where(c != 0, t, f)


# ---------------------------------------------------------------- cast / stop_gradient

_CASTABLE = ("f32", "f64", "f16", "bf16", "i1", "i8", "i32", "i64")


@irdl_op_definition
class CastOp(RlxOp):
    """Convert the element type; the target comes from the result type.

    Float -> int rounds half away from zero; bool -> number is 0/1; number ->
    bool is ``!= 0``. Every pair of f32, f64, f16, bf16, i1, i8, i32, i64 is a real conversion (to
    f16/bf16: rounded to nearest even; to i8: through i32, wrapping as numpy's astype).
    """

    name = "rlx.cast"
    TAKES_STORAGE: ClassVar[bool] = True
    x = operand_def(TensorType)
    result = result_def(TensorType)
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        if out is None:
            raise ShapeError("'rlx.cast' needs its result type")
        src, dst = dtype_of(types[0]), dtype_of(out[0])
        if src not in _CASTABLE or dst not in _CASTABLE:
            raise ShapeError(f"cannot cast {src} to {dst}")
        if shape_of(out[0]) != shape_of(types[0]):
            raise ShapeError("'rlx.cast' keeps the shape: result shape differs from operand")
        return [out[0]]


@INTERPRET.register(CastOp)
def _interpret_cast(op: CastOp, x: np.ndarray) -> np.ndarray:
    target = numpy_dtype(op.result.type)
    if is_real_float(x.dtype) and target.kind in "iu":
        x = round_half_away(x)
        if target.itemsize < 4:  # to i8 through i32 (wrapping), as native code
            x = x.astype(np.int32)
    if target == np.bool_:
        return x != 0
    with np.errstate(over="ignore"):  # to f16/bf16: out of range is inf, as native code
        return x.astype(target)


@irdl_op_definition
class StopGradientOp(RlxOp):
    """Identity forward; no gradient flows to the operand."""

    name = "rlx.stop_gradient"
    x = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        return [types[0]]


@INTERPRET.register(StopGradientOp)
def _interpret_stop_gradient(op: StopGradientOp, x: np.ndarray) -> np.ndarray:
    return x.copy()


# ---------------------------------------------------------------- constant


@irdl_op_definition
class ConstantOp(RlxOp):
    """A literal tensor: ``value`` is a dense elements attribute of the result type."""

    name = "rlx.constant"
    TAKES_STORAGE: ClassVar[bool] = True
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"value": "dense elements of the result type"}

    @classmethod
    def infer(cls, types, attrs: Mapping[str, Any], out: Sequence[TensorType] | None):
        value = attrs.get("value")
        if not isinstance(value, np.ndarray):
            raise ShapeError("'rlx.constant' needs a dense 'value' attribute")
        return [tensor(value.shape, _dtype_of_array(value))]


def _dtype_of_array(a: np.ndarray) -> str:
    from rlx_mlir.dialects.base import NUMPY_DTYPES

    for name, dt in NUMPY_DTYPES.items():
        if dt == a.dtype:
            return name
    raise ShapeError(f"unsupported constant dtype {a.dtype}")


@INTERPRET.register(ConstantOp)
def _interpret_constant(op: ConstantOp) -> np.ndarray:
    return from_attr(op.attributes["value"])


# ---------------------------------------------------------------- VJP rules (SPEC 5.2-5.4)


@VJP.register(AddOp)
def _vjp_add(ctx: VjpContext, op: BinaryOp, g: Tensor) -> list[Tensor | None]:
    a, b = ctx.inputs(op)
    return [ctx.unbroadcast(g, a.shape), ctx.unbroadcast(g, b.shape)]


@VJP.register(SubOp)
def _vjp_sub(ctx: VjpContext, op: BinaryOp, g: Tensor) -> list[Tensor | None]:
    a, b = ctx.inputs(op)
    return [ctx.unbroadcast(g, a.shape), ctx.unbroadcast(-g, b.shape)]


def _conj(ctx: VjpContext, x: Tensor) -> Tensor:
    """``conj(x)`` for complex ``x`` (the Wirtinger VJPs of SPEC 5.9); real ``x`` as is."""
    return ctx.b.conjugate(x) if x.dtype in COMPLEX_DTYPES else x


@VJP.register(MulOp)
def _vjp_mul(ctx: VjpContext, op: BinaryOp, g: Tensor) -> list[Tensor | None]:
    """``g b`` and ``g a``; complex: ``g conj(b)`` and ``g conj(a)``."""
    a, b = ctx.inputs(op)
    return [ctx.unbroadcast(g * _conj(ctx, b), a.shape),
            ctx.unbroadcast(g * _conj(ctx, a), b.shape)]


@VJP.register(DivOp)
def _vjp_div(ctx: VjpContext, op: BinaryOp, g: Tensor) -> list[Tensor | None]:
    """``g / b`` and ``-g y / b``; complex: b and y conjugated."""
    a, b = ctx.inputs(op)
    (y,) = ctx.outputs(op)
    b_, y_ = _conj(ctx, b), _conj(ctx, y)
    return [ctx.unbroadcast(g / b_, a.shape), ctx.unbroadcast(-(g * y_) / b_, b.shape)]


def _pow_base_prime(ctx: VjpContext | JvpContext, a: Tensor, b: Tensor) -> Tensor:
    """``d(a^b)/da = b a^(b-1)``, 0 where ``b == 0`` (as JAX and PyTorch: ``a ** 0`` is
    constant, while ``0 * 0^-1`` would be NaN at ``a = 0``)."""
    return ctx.b.where(b == 0.0, ctx.zeros((), a.dtype), b * ctx.b.pow(a, b - 1.0))


@VJP.register(PowOp)
def _vjp_pow(ctx: VjpContext, op: BinaryOp, g: Tensor) -> list[Tensor | None]:
    """d/da = b a^(b-1) (finite at a = 0 for b >= 1 and b = 0); d/db = y ln a (NaN for
    a < 0; 0 at a = 0, as JAX's, where ln reads 1 instead)."""
    a, b = ctx.inputs(op)
    (y,) = ctx.outputs(op)
    da = g * _pow_base_prime(ctx, a, b)
    db = g * y * _log_nonzero(ctx, a)
    return [ctx.unbroadcast(da, a.shape), ctx.unbroadcast(db, b.shape)]


@VJP.register(MaxOp, MinOp)
def _vjp_min_max(ctx: VjpContext, op: BinaryOp, g: Tensor) -> list[Tensor | None]:
    """The whole gradient goes to the operand that won; ties go to operand 0 (SPEC 11.6)."""
    a, b = ctx.inputs(op)
    (y,) = ctx.outputs(op)
    a_won = ctx.b.compare(a, y, predicate="eq")
    zero = ctx.zeros((), g.dtype)
    return [
        ctx.unbroadcast(ctx.b.where(a_won, g, zero), a.shape),
        ctx.unbroadcast(ctx.b.where(a_won, zero, g), b.shape),
    ]


@VJP.register(ReluOp)
def _vjp_relu(ctx: VjpContext, op: UnaryOp, g: Tensor) -> list[Tensor | None]:
    (x,) = ctx.inputs(op)
    return [ctx.b.relu_backward(x, g)]


def _complex_derivative(ctx: VjpContext | JvpContext, op: UnaryOp) -> Tensor:
    """``f'(z)`` of a complex activation (neg, exp, log, sqrt: all holomorphic)."""
    (z,) = ctx.inputs(op)
    (y,) = ctx.outputs(op)
    kind = op.name.removeprefix("rlx.")
    if kind == "neg":
        return ctx.b.full((), -1.0, z.dtype)
    return {"exp": lambda: y, "log": lambda: 1.0 / z, "sqrt": lambda: 0.5 / y}[kind]()


def _vjp_activation(ctx: VjpContext, op: UnaryOp, g: Tensor) -> list[Tensor | None]:
    """The activation backward op; complex: ``g conj(f'(z))`` (SPEC 5.3)."""
    (x,) = ctx.inputs(op)
    if x.dtype in COMPLEX_DTYPES:
        return [g * ctx.b.conjugate(_complex_derivative(ctx, op))]
    return [ctx.b.activation_backward(x, g, kind=op.name.removeprefix("rlx."))]


for _kind, _op in ACTIVATION_OPS.items():
    if _kind != "relu":
        VJP.register(_op)(_vjp_activation)


@VJP.register(WhereOp)
def _vjp_where(ctx: VjpContext, op: WhereOp, g: Tensor) -> list[Tensor | None]:
    cond, t, f = ctx.inputs(op)
    zero = ctx.zeros((), g.dtype)
    return [
        None,
        ctx.unbroadcast(ctx.b.where(cond, g, zero), t.shape),
        ctx.unbroadcast(ctx.b.where(cond, zero, g), f.shape),
    ]


@VJP.register(CastOp)
def _vjp_cast(ctx: VjpContext, op: CastOp, g: Tensor) -> list[Tensor | None]:
    (x,) = ctx.inputs(op)
    return [ctx.b.cast(g, x.dtype) if x.dtype in REAL_FLOAT_DTYPES else None]


VJP.register(CompareOp, StopGradientOp, ConstantOp)(no_gradient)


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)


def _to_result(ctx: JvpContext, op: RlxOp, t: Tensor | None) -> Tensor | None:
    """A tangent broadcast to the op's result shape (None stays None)."""
    return None if t is None else ctx.broadcast_to(t, shape_of(op.results[0].type))


@JVP.register(AddOp, SubOp)
def _jvp_add_sub(ctx: JvpContext, op: BinaryOp, ta, tb) -> list[Tensor | None]:
    if isinstance(op, SubOp) and tb is not None:
        tb = -tb
    return [_to_result(ctx, op, ctx.add(ta, tb))]


@JVP.register(MulOp)
def _jvp_mul(ctx: JvpContext, op: BinaryOp, ta, tb) -> list[Tensor | None]:
    a, b = ctx.inputs(op)
    return [_to_result(ctx, op, ctx.add(ctx.mul(ta, b), ctx.mul(tb, a)))]


@JVP.register(DivOp)
def _jvp_div(ctx: JvpContext, op: BinaryOp, ta, tb) -> list[Tensor | None]:
    _, b = ctx.inputs(op)
    (y,) = ctx.outputs(op)
    numerator = ctx.add(ta, None if tb is None else -(tb * y))
    return [_to_result(ctx, op, numerator / b)]


@JVP.register(PowOp)
def _jvp_pow(ctx: JvpContext, op: BinaryOp, ta, tb) -> list[Tensor | None]:
    a, b = ctx.inputs(op)
    (y,) = ctx.outputs(op)
    da = None if ta is None else ta * _pow_base_prime(ctx, a, b)
    db = None if tb is None else tb * y * _log_nonzero(ctx, a)
    return [_to_result(ctx, op, ctx.add(da, db))]


def _log_nonzero(ctx: VjpContext | JvpContext, a: Tensor) -> Tensor:
    """``ln a`` with 0 read as 1 (``x ** e``'s exponent derivative is 0 at x = 0, as
    JAX's ``_replace_zero``), not ``0 * -inf``."""
    zero = ctx.b.compare(a, ctx.zeros((), a.dtype), predicate="eq")
    return ctx.b.log(ctx.b.where(zero, ctx.b.full((), 1.0, a.dtype), a))


@JVP.register(MaxOp, MinOp)
def _jvp_min_max(ctx: JvpContext, op: BinaryOp, ta, tb) -> list[Tensor | None]:
    a, b = ctx.inputs(op)
    (y,) = ctx.outputs(op)
    a_won = ctx.b.compare(a, y, predicate="eq")
    zero = ctx.zeros((), y.dtype)
    return [ctx.b.where(a_won, ta if ta is not None else zero, tb if tb is not None else zero)]


@JVP.register(ReluOp)
def _jvp_relu(ctx: JvpContext, op: UnaryOp, t) -> list[Tensor | None]:
    (x,) = ctx.inputs(op)
    return [ctx.b.relu_backward(x, t)]


def _jvp_activation(ctx: JvpContext, op: UnaryOp, t) -> list[Tensor | None]:
    """``f'(x) * t``: the activation backward op applied to the tangent."""
    (x,) = ctx.inputs(op)
    if x.dtype in COMPLEX_DTYPES:
        return [t * _complex_derivative(ctx, op)]
    return [ctx.b.activation_backward(x, t, kind=op.name.removeprefix("rlx."))]


for _kind, _op in ACTIVATION_OPS.items():
    if _kind != "relu":
        JVP.register(_op)(_jvp_activation)


@JVP.register(WhereOp)
def _jvp_where(ctx: JvpContext, op: WhereOp, tc, tt, tf) -> list[Tensor | None]:
    if tt is None and tf is None:
        return [None]
    cond, _, _ = ctx.inputs(op)
    zero = ctx.zeros((), dtype_of(op.results[0].type))
    return [_to_result(ctx, op, ctx.b.where(cond, tt if tt is not None else zero,
                                            tf if tf is not None else zero))]


@JVP.register(CastOp)
def _jvp_cast(ctx: JvpContext, op: CastOp, t) -> list[Tensor | None]:
    target = dtype_of(op.results[0].type)
    return [ctx.b.cast(t, target) if target in REAL_FLOAT_DTYPES else None]


JVP.register(CompareOp, StopGradientOp, ConstantOp)(lambda ctx, op, *ts: [None])


# ---------------------------------------------------------------- batching rules (SPEC 6.2)

VMAP.register(*BINARY_OPS, CompareOp, WhereOp)(
    lambda ctx, op, xs, batched: ctx.elementwise(op, xs, batched))
VMAP.register(*ACTIVATION_OPS.values(), StopGradientOp)(
    lambda ctx, op, xs, batched: ctx.emit_like(op, xs))


@VMAP.register(CastOp)
def _vmap_cast(ctx: VmapContext, op: CastOp, xs, batched) -> list[Tensor]:
    return ctx.emit_like(op, xs, out_shapes=[shape_of(op.results[0].type)])


OPS = [
    *BINARY_OPS, *ACTIVATION_OPS.values(), CompareOp, WhereOp, CastOp, StopGradientOp,
    ConstantOp,
]


# ---------------------------------------------------------------- LOWER rules
# ``rule(op, e, *operands) -> value``: ``e`` is a rlx_mlir.lowering.Emitter inserting
# before ``op`` (docs/lowering.md). Bodies are ``body(s, *scalars) -> scalar``.

from rlx_mlir.rules import LOWER  # noqa: E402

_INV_SQRT_2 = 1.0 / math.sqrt(2.0)  # lowered as a product: a vector division is ~10x slower
_GELU_C = math.sqrt(2.0 / math.pi)


def _element_type(value: Any) -> Any:
    return value.type.element_type


def _int_div_body(s: Any, a: Any, b: Any) -> Any:
    """Truncating integer division; division by zero gives 0 (SPEC 2.1.1). A division
    by -1 is a negation (``INT_MIN / -1`` wraps to ``INT_MIN``, as numpy and JAX), never
    a ``divsi`` that traps (SIGFPE) on that overflow."""
    by_zero, by_minus_one = s.cmp("eq", b, 0), s.cmp("eq", b, -1)
    safe = s.select(by_zero, 1, s.select(by_minus_one, 1, b))
    return s.select(by_zero, 0, s.select(by_minus_one, s.sub(0, a), s.div(a, safe)))


def _div_body(s: Any, a: Any, b: Any) -> Any:
    return _int_div_body(s, a, b) if s.is_integer(a) else s.div(a, b)


def _pow_body(s: Any, a: Any, b: Any) -> Any:
    return s.pow(a, b) if s.is_float(a) else s.pow(a, s.max(b, 0))


_BINARY_BODIES: dict[type, Callable[..., Any]] = {
    AddOp: lambda s, a, b: s.add(a, b),
    SubOp: lambda s, a, b: s.sub(a, b),
    MulOp: lambda s, a, b: s.mul(a, b),
    DivOp: _div_body,
    MinOp: lambda s, a, b: s.min(a, b),
    MaxOp: lambda s, a, b: s.max(a, b),
    PowOp: _pow_body,
}


@LOWER.register(*BINARY_OPS)
def _lower_binary(op: BinaryOp, e: Any, lhs: Any, rhs: Any) -> Any:
    return e.elementwise([lhs, rhs], _element_type(op.result), _BINARY_BODIES[type(op)])


def _gelu_body(s: Any, x: Any) -> Any:
    return s.mul(s.mul(x, 0.5), s.add(s.erf(s.mul(x, _INV_SQRT_2)), 1.0))


def _gelu_approx_body(s: Any, x: Any) -> Any:
    cube = s.mul(s.mul(x, x), x)
    inner = s.mul(s.add(x, s.mul(cube, 0.044715)), _GELU_C)
    return s.mul(s.mul(x, 0.5), s.add(s.tanh(inner), 1.0))


_ACTIVATION_BODIES: dict[str, Callable[..., Any]] = {
    "relu": lambda s, x: s.max(x, 0.0),
    "sigmoid": lambda s, x: s.sigmoid(x),
    "tanh": lambda s, x: s.tanh(x),
    "silu": lambda s, x: s.mul(x, s.sigmoid(x)),
    "gelu": _gelu_body,
    "gelu_approx": _gelu_approx_body,
    "exp": lambda s, x: s.exp(x),
    "log": lambda s, x: s.log(x),
    "sqrt": lambda s, x: s.sqrt(x),
    "rsqrt": lambda s, x: s.div(1.0, s.sqrt(x)),
    "neg": lambda s, x: s.neg(x),
    "abs": lambda s, x: s.abs(x),
    "sin": lambda s, x: s.sin(x),
    "cos": lambda s, x: s.cos(x),
    "tan": lambda s, x: s.tan(x),
    "atan": lambda s, x: s.atan(x),
    "round": lambda s, x: s.round_half_away(x),
}


@LOWER.register(*ACTIVATION_OPS.values())
def _lower_activation(op: UnaryOp, e: Any, x: Any) -> Any:
    kind = op.name.removeprefix("rlx.")
    body = _ACTIVATION_BODIES[kind]
    if kind in ("sin", "cos"):
        return lower_trig(e, x, [x], lambda s, v, cosine=kind == "cos": trig(s, v, cosine),
                          body)
    return e.elementwise([x], _element_type(op.result), body)


def trig(s: Any, v: Any, cosine: bool) -> Any:
    """The vectorized f32 ``sin`` / ``cos`` (``fastmath.sin_cos_f32``)."""
    from rlx_mlir.lowering import fastmath

    return fastmath.sin_cos_f32(s, v, cosine)


def lower_trig(e: Any, x: Any, inputs: list[Any], fast: Callable[..., Any],
               exact: Callable[..., Any]) -> Any:
    """An elementwise op on ``inputs`` whose body takes ``sin`` / ``cos`` of ``x`` (the
    first input): for f32, the ``fast`` body when ``max |x|`` is within
    ``fastmath.SIN_COS_RANGE`` (NaNs do not count), else the ``exact`` one (libm's
    ``sinf`` per element, which reduces huge arguments exactly). ``sin`` of ``[1024,
    1024]`` f32: 4.7 -> 0.47 ms (numpy 0.38, torch 0.50); with one argument beyond the
    range, 9.5 ms (the exact loop runs inside the branch, unscheduled)."""
    from rlx_mlir.lowering import fastmath
    from rlx_mlir.lowering.regions import first_element, if_else

    dtype = _element_type(x)
    if str(dtype) != "f32":
        return e.elementwise(inputs, dtype, exact)
    shape = x.type.get_shape()
    rank = len(shape)

    def larger(s: Any, v: Any, acc: Any) -> Any:  # NaN (compares false) is skipped
        return s.select(s.cmp("gt", s.abs(v), acc), s.abs(v), acc)

    rows = e.reduce(x, [rank - 1], 0.0, larger) if rank > 1 else x  # row by row: vectorized
    peak = e.reduce(rows, list(range(max(rank - 1, 1))), 0.0, larger) if rank else \
        e.elementwise([x], dtype, lambda s, v: s.abs(v))
    beyond = e.cmp("gt", first_element(e, peak), fastmath.SIN_COS_RANGE)
    quick = e.elementwise(inputs, dtype, fast)  # outside the branch: scheduled, vectorized
    identity = AffineMap.identity(rank)

    def overwrite(s: Any) -> list[Any]:  # into quick's buffer: neither branch copies
        return [s.generic(inputs, [quick], [identity] * (len(inputs) + 1),
                          ["parallel"] * rank, lambda t, *v: exact(t, *v[:-1]))]

    return if_else(e, beyond, [x.type], overwrite, lambda s: [quick])[0]


@LOWER.register(CompareOp)
def _lower_compare(op: CompareOp, e: Any, lhs: Any, rhs: Any) -> Any:
    predicate = op.attr("predicate")
    return e.elementwise([lhs, rhs], "i1", lambda s, a, b: s.cmp(predicate, a, b))


@LOWER.register(WhereOp)
def _lower_where(op: WhereOp, e: Any, cond: Any, on_true: Any, on_false: Any) -> Any:
    return e.elementwise([cond, on_true, on_false], _element_type(op.result),
                         lambda s, c, t, f: s.select(s.truth(c), t, f))


@LOWER.register(CastOp)
def _lower_cast(op: CastOp, e: Any, x: Any) -> Any:
    target = _element_type(op.result)
    if target == _element_type(x):
        return x
    return e.elementwise([x], target, lambda s, v: s.cast(v, target))


@LOWER.register(StopGradientOp)
def _lower_stop_gradient(op: StopGradientOp, e: Any, x: Any) -> Any:
    return x


@LOWER.register(ConstantOp)
def _lower_constant(op: ConstantOp, e: Any) -> Any:
    """``arith.constant``; a complex one (written in MLIR text) from its two parts."""
    if dtype_of(op.result.type) in COMPLEX_DTYPES:
        value = from_attr(op.attributes["value"])
        parts = [e.constant(np.array(p)) for p in (value.real, value.imag)]
        return e.elementwise(parts, _element_type(op.result), lambda s, re, im: s.make_complex(re, im),
                             value.shape)
    return e.constant(op.attributes["value"])
