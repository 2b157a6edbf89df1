"""Complex family: build, split and conjugate complex tensors, and ``|z|^2`` (SPEC 2.2.10).

``c64`` is ``complex<f32>`` (numpy's complex64), ``c128`` is ``complex<f64>`` (the f64
twin, as f64 is f32's); the real side of each op is its part type. Arithmetic on them is
the elementwise family
(add, sub, mul, div, neg, exp, log, sqrt); this module holds the ops that cross between
complex and real tensors::

    %z = rlx.complex %re, %im : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>>
    %n = rlx.complex_norm_sq %z : (tensor<4xcomplex<f32>>) -> tensor<4xf32>

Gradients follow SPEC 5.9: the cotangent of a complex value is the Wirtinger derivative
``dL/d conj(z) = (dL/d re + i dL/d im) / 2`` of the real loss ``L`` (half of PyTorch's
``z.grad``), so ``|z|^2`` sends back ``g z`` and ``conj`` sends back ``conj(g)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import operand_def, result_def

from rlx_mlir.dialects.base import (
    COMPLEX_OF,
    REAL_OF,
    RlxOp,
    ShapeError,
    broadcast_shapes,
    define_op,
    dtype_of,
    shape_of,
    tensor,
)
from rlx_mlir.rules import INTERPRET, JVP, LOWER, VJP, VMAP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext


def _expect(op_name: str, what: str, t: Any, dtypes: dict[str, str]) -> str:
    """``t``'s dtype, which must be a key of ``dtypes``; returns its partner there."""
    dtype = dtype_of(t)
    if dtype not in dtypes:
        raise ShapeError(f"'{op_name}' {what} must be {' or '.join(dtypes)}, got {dtype}")
    return dtypes[dtype]


# ---------------------------------------------------------------- c64 -> c64 / f32


class ComplexUnaryOp(RlxOp):
    """An elementwise op on a complex tensor; the result is complex (``RESULT = "complex"``)
    or its part type (``"real"``)."""

    z = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {}
    RESULT: ClassVar[str] = "complex"
    NUMPY_FN: ClassVar[Callable[[np.ndarray], np.ndarray]]
    LOWER_BODY: ClassVar[Callable[..., Any]]

    @classmethod
    def infer(cls, types, attrs, out):
        part = _expect(cls.name, "operand", types[0], REAL_OF)
        return [tensor(shape_of(types[0]), COMPLEX_OF[part] if cls.RESULT == "complex" else part)]


def _unary(class_name: str, name: str, doc: str, result: str, fn, body) -> type[RlxOp]:
    return define_op(class_name, ComplexUnaryOp, name, doc, RESULT=result,
                     NUMPY_FN=staticmethod(fn), LOWER_BODY=staticmethod(body))


def _norm_sq_body(s: Any, z: Any) -> Any:
    re, im = s.real(z), s.imag(z)
    return s.add(s.mul(re, re), s.mul(im, im))


ConjugateOp = _unary("ConjugateOp", "rlx.conjugate", "Elementwise ``re - i im``.", "complex",
                     np.conjugate, lambda s, z: s.conj(z))
RealOp = _unary("RealOp", "rlx.real", "The real part (c64 -> f32, c128 -> f64).", "real",
                np.real, lambda s, z: s.real(z))
ImagOp = _unary("ImagOp", "rlx.imag", "The imaginary part (c64 -> f32, c128 -> f64).", "real",
                np.imag, lambda s, z: s.imag(z))
ComplexNormSqOp = _unary(
    "ComplexNormSqOp", "rlx.complex_norm_sq",
    "``|z|^2 = re^2 + im^2`` in the part type (SPEC 2.2.10).",
    "real", lambda z: z.real * z.real + z.imag * z.imag, _norm_sq_body)
UNARY_OPS = (ConjugateOp, RealOp, ImagOp, ComplexNormSqOp)


# ---------------------------------------------------------------- (f32|c64, f32) -> c64


class ComplexBinaryOp(RlxOp):
    """An elementwise op with NumPy broadcasting: ``(real, real) -> complex``
    (``LHS = "real"``) or ``(complex, real) -> complex`` (``LHS = "complex"``), the real
    operands of the complex one's part type."""

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {}
    LHS: ClassVar[str] = "real"
    NUMPY_FN: ClassVar[Callable[[np.ndarray, np.ndarray], np.ndarray]]
    LOWER_BODY: ClassVar[Callable[..., Any]]

    @classmethod
    def infer(cls, types, attrs, out):
        first = _expect(cls.name, "first operand", types[0],
                        {f: f for f in COMPLEX_OF} if cls.LHS == "real" else REAL_OF)
        part = _expect(cls.name, "second operand", types[1], {f: f for f in COMPLEX_OF})
        if part != first:
            raise ShapeError(f"'{cls.name}' second operand must be {first}, got {part}")
        shape = broadcast_shapes(shape_of(types[0]), shape_of(types[1]))
        return [tensor(shape, COMPLEX_OF[part])]


def _complex_of(part: np.ndarray) -> np.dtype:
    return np.dtype(np.complex64 if part.dtype == np.float32 else np.complex128)


ComplexOp = define_op(
    "ComplexOp", ComplexBinaryOp, "rlx.complex", "``re + i im`` from two f32 tensors.",
    NUMPY_FN=staticmethod(lambda re, im: re + np.asarray(1j, _complex_of(re)) * im),
    LOWER_BODY=staticmethod(lambda s, re, im: s.make_complex(re, im)))
ComplexNormSqBackwardOp = define_op(
    "ComplexNormSqBackwardOp", ComplexBinaryOp, "rlx.complex_norm_sq_backward",
    "``g z``: the cotangent of ``z`` in ``|z|^2`` for the cotangent ``g`` (SPEC 5.9).",
    LHS="complex", NUMPY_FN=staticmethod(lambda z, g: g * z),
    LOWER_BODY=staticmethod(lambda s, z, g: s.mul(z, s.make_complex(g, 0.0))))
BINARY_OPS = (ComplexOp, ComplexNormSqBackwardOp)
OPS = [*UNARY_OPS, *BINARY_OPS]


@INTERPRET.register(*UNARY_OPS)
def _interpret_unary(op: ComplexUnaryOp, z: np.ndarray) -> np.ndarray:
    return np.asarray(type(op).NUMPY_FN(z))


@INTERPRET.register(*BINARY_OPS)
def _interpret_binary(op: ComplexBinaryOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(type(op).NUMPY_FN(a, b))


# ---------------------------------------------------------------- VJP rules (SPEC 5.9)
# With c = dL/d conj(w) for a complex w, a real x gets dL/dx = 2 Re(...) terms and a
# complex z gets the Wirtinger derivative; see the module docstring.


def _twice(x: Tensor) -> Tensor:
    return x + x


@VJP.register(ConjugateOp)
def _vjp_conjugate(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    return [ctx.b.conjugate(g)]


@VJP.register(RealOp)
def _vjp_real(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    """``Re z = (z + conj z) / 2``: the cotangent of z is ``g / 2``."""
    return [ctx.b.complex(g * 0.5, ctx.zeros((), g.dtype))]


@VJP.register(ImagOp)
def _vjp_imag(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    """``Im z = (z - conj z) / 2i``: the cotangent of z is ``i g / 2``."""
    return [ctx.b.complex(ctx.zeros((), g.dtype), g * 0.5)]


@VJP.register(ComplexNormSqOp)
def _vjp_norm_sq(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    (z,) = ctx.inputs(op)
    return [ctx.b.complex_norm_sq_backward(z, g)]


@VJP.register(ComplexOp)
def _vjp_complex(ctx: VjpContext, op: RlxOp, c: Tensor) -> list[Tensor | None]:
    """``z = re + i im``: ``dL/d re = 2 Re c``, ``dL/d im = 2 Im c``."""
    re, im = ctx.inputs(op)
    return [ctx.unbroadcast(_twice(ctx.b.real(c)), re.shape),
            ctx.unbroadcast(_twice(ctx.b.imag(c)), im.shape)]


@VJP.register(ComplexNormSqBackwardOp)
def _vjp_norm_sq_backward(ctx: VjpContext, op: RlxOp, c: Tensor) -> list[Tensor | None]:
    """``w = g z`` (g real): z gets ``g c``; g gets ``2 Re(c conj z)``."""
    z, g = ctx.inputs(op)
    dz = ctx.b.complex_norm_sq_backward(c, g)
    dg = _twice(ctx.b.real(c * ctx.b.conjugate(z)))
    return [ctx.unbroadcast(dz, z.shape), ctx.unbroadcast(dg, g.shape)]


# ---------------------------------------------------------------- JVP rules


@JVP.register(ConjugateOp, RealOp, ImagOp)
def _jvp_linear(ctx: JvpContext, op: RlxOp, t: Tensor | None) -> list[Tensor | None]:
    """Real-linear ops: the op applied to the tangent."""
    return [None if t is None else ctx.b.emit(op.name.removeprefix("rlx."), t)]


@JVP.register(ComplexNormSqOp)
def _jvp_norm_sq(ctx: JvpContext, op: RlxOp, t: Tensor | None) -> list[Tensor | None]:
    """``d|z|^2 = 2 Re(conj(z) dz)``."""
    if t is None:
        return [None]
    (z,) = ctx.inputs(op)
    return [_twice(ctx.b.real(ctx.b.conjugate(z) * t))]


def _zeros_or(ctx: JvpContext, t: Tensor | None, like: Tensor) -> Tensor:
    return t if t is not None else ctx.zeros((), like.dtype)


@JVP.register(ComplexOp)
def _jvp_complex(ctx: JvpContext, op: RlxOp, t_re, t_im) -> list[Tensor | None]:
    if t_re is None and t_im is None:
        return [None]
    re, im = ctx.inputs(op)
    t = ctx.b.complex(_zeros_or(ctx, t_re, re), _zeros_or(ctx, t_im, im))
    return [ctx.broadcast_to(t, shape_of(op.results[0].type))]


@JVP.register(ComplexNormSqBackwardOp)
def _jvp_norm_sq_backward(ctx: JvpContext, op: RlxOp, t_z, t_g) -> list[Tensor | None]:
    z, g = ctx.inputs(op)
    terms = [None if t_z is None else ctx.b.complex_norm_sq_backward(t_z, g),
             None if t_g is None else ctx.b.complex_norm_sq_backward(z, t_g)]
    total = ctx.add(*terms)
    return [None if total is None else ctx.broadcast_to(total, shape_of(op.results[0].type))]


# ---------------------------------------------------------------- batching rules

VMAP.register(*UNARY_OPS)(lambda ctx, op, xs, batched: ctx.emit_like(op, xs))
VMAP.register(*BINARY_OPS)(lambda ctx, op, xs, batched: ctx.elementwise(op, xs, batched))


# ---------------------------------------------------------------- LOWER rules


@LOWER.register(*UNARY_OPS, *BINARY_OPS)
def _lower(op: RlxOp, e: Any, *operands: Any) -> Any:
    """One elementwise ``linalg.generic`` whose body uses the ``complex`` dialect."""
    return e.elementwise(list(operands), op.results[0].type.element_type, type(op).LOWER_BODY)
