"""The Python builder: write an rlx function op by op, shapes inferred.

>>> import rlx_mlir as rlx
>>> b = rlx.Builder("mlp")
>>> x = b.input("x", (4, 3))
>>> w = b.param("w", (3, 2))
>>> y = b.relu(x @ w)
>>> b.ret(b.reduce_sum(y, axes=[0, 1]))
>>> print(b.module)  # doctest: +ELLIPSIS
builtin.module {
  func.func @mlp(%x: tensor<4x3xf32> {rlx.name = "x"}, ...

Every ``rlx.<op>`` is a method (``b.softmax(x, axis=-1)``, ``b.attention(q, k, v,
num_heads=4, head_dim=16, mask_kind="causal")``); operands first, attributes as
keywords. Tensors support ``+ - * / // % @ ** -x``, ``.T`` (all axes reversed) and
``.mT`` (the last two swapped); ``/`` is true division, ``//`` and ``%`` round toward
-inf (``divmod``), and a float scalar promotes an integer tensor to f32, as in numpy and
JAX.
"""

from __future__ import annotations

import inspect
import math
import os
from collections.abc import Callable, Sequence
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from rlx_mlir.diagnostics import RlxError, loc_from_attr, make_loc, op_message
from rlx_mlir.dialects import op_by_name
from rlx_mlir.dialects.base import (
    COMPLEX_DTYPES,
    FLOAT_DTYPES,
    HALF_DTYPES,
    INT_DTYPES,
    NUMPY_DTYPES,
    REAL_FLOAT_DTYPES,
    REAL_OF,
    STORAGE_DTYPES,
    dtype_of,
    is_real_float,
    shape_of,
    tensor,
    to_attr,
)
from rlx_mlir.ir import to_text

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_LIBRARY_DIRS = (_PACKAGE_DIR + os.sep, _NUMPY_DIR + os.sep)
"""Frames skipped for a user location: rlx_mlir's, and numpy's (``np.sum(t)`` calls
``t.sum``)."""


class _RegionCapture:
    """``Builder.capture`` of a closed region being built: a tensor of ``outer`` (or of a
    builder ``outer`` itself captures from) becomes a block argument at ``at`` + k."""

    def __init__(self, builder: Builder, outer: Builder, at: int):
        self.builder, self.outer, self.at = builder, outer, at
        self.tensors: list[Tensor] = []
        self._args: dict[SSAValue, Tensor] = {}

    def __call__(self, t: Tensor) -> Tensor:
        value = self.outer._value(t)  # in ``outer`` (captured there first if need be)
        if value not in self._args:
            block = self.builder.block
            arg = block.insert_arg(t.type, self.at + len(self.tensors))
            self._args[value] = self.builder.wrap(arg)
            self.tensors.append(self.outer.wrap(value))
        return self._args[value]


class _FromAbove:
    """``Builder.capture`` of a region that may use values defined above its op: a tensor
    of ``outer`` (or one ``outer`` captures) is used as it is."""

    def __init__(self, outer: Builder):
        self.outer = outer  # the builder it nests in (``innermost`` counts the depth)

    def __call__(self, t: Tensor) -> Tensor:
        return self.outer.wrap(self.outer._value(t))


def _is_python_number(x: Any) -> bool:
    return isinstance(x, (int, float, complex)) and not isinstance(x, (bool, np.generic))


def _user_location():
    """The first stack frame outside rlx_mlir and numpy: the user's line, for
    diagnostics."""
    frame = inspect.currentframe()
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _LIBRARY_DIRS
    ):
        frame = frame.f_back
    if frame is None:
        return None
    return make_loc(frame.f_code.co_filename, frame.f_lineno, 1)


class Tensor:
    """A value under construction: wraps an SSA value and its builder."""

    __array_priority__ = 1000  # numpy defers ``ndarray + Tensor`` to us
    weak = False
    """JAX's weak type: a traced Python number (a ``jit`` argument ``0.01``), which takes
    the other operand's dtype as a Python number would (a bf16 tensor stays bf16)."""

    def __init__(self, builder: Builder, value: SSAValue):
        self.builder = builder
        self.value = value

    @property
    def type(self) -> TensorType:
        return self.value.type  # type: ignore[return-value]

    @property
    def shape(self) -> tuple[int, ...]:
        return shape_of(self.type)

    @property
    def dtype(self) -> str:
        return dtype_of(self.type)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements (numpy's ``size``)."""
        return math.prod(self.shape)

    def __getattr__(self, name: str):
        """PyTorch spellings get a pointer to the numpy one rlx tensors follow."""
        hint = _TORCH_SPELLINGS.get(name)
        if hint is None or name.startswith("_"):
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        raise AttributeError(f"'Tensor' object has no attribute '{name}' (rlx tensors follow "
                             f"numpy and JAX: {hint})")

    def __repr__(self) -> str:
        return f"Tensor({self.type})"

    def _lift(self, other: Any) -> Tensor:
        """Python scalars and numpy arrays become constants of this tensor's dtype (an
        integer that does not fit it is an error, as in JAX)."""
        if isinstance(other, Tensor):
            return other
        array = np.asarray(other)
        if array.dtype.kind not in "biufc" and not is_real_float(array.dtype):
            raise RlxError(f"cannot combine a tensor with {type(other).__name__} {other!r}: "
                           "expected a tensor, a number, or a numpy array or nested list "
                           "of numbers", loc=loc_from_attr(_user_location()))
        if array.dtype.kind in "iu" and self.dtype in (*INT_DTYPES, "i8"):
            info = np.iinfo(NUMPY_DTYPES[self.dtype])
            if array.size and (array.min() < info.min or array.max() > info.max):
                raise RlxError(f"the integer {other!r} does not fit this tensor's dtype "
                               f"{self.dtype}", loc=loc_from_attr(_user_location()))
        return self.builder.constant(array, self.dtype)

    def _promoted(self, other: Any) -> tuple[Tensor, Any]:
        """numpy/JAX promotion between an integer (or bool) and a float operand: the
        integer side becomes the float side's dtype, f32 for a Python or numpy float
        (``int_tensor * 0.5`` is 3.5, not 0; ``f32_tensor * int_tensor`` is f32)."""
        if isinstance(other, Tensor) and other.weak != self.weak:
            return self._weakly_promoted(other)
        if isinstance(other, Tensor):
            if {self.dtype, other.dtype} & set(COMPLEX_DTYPES):  # complex wins, as numpy
                both = _complex_result(self.dtype, other.dtype)
                return self.astype(both), other.astype(both)
            if _is_inexact(self.dtype) and not _is_inexact(other.dtype):
                return self, other.astype(self.dtype)
            if _is_inexact(other.dtype) and not _is_inexact(self.dtype):
                return self.astype(other.dtype), other
            if self.dtype != other.dtype and _is_inexact(self.dtype) and _is_inexact(other.dtype):
                both = _float_result(self.dtype, other.dtype)  # the wider float wins
                return self.astype(both), other.astype(both)
            wider = _wider_integer(self.dtype, other.dtype)
            if wider is not None:  # i32 + i64 is i64, bool + i32 is i32 (numpy's rule)
                return self.astype(wider), other.astype(wider)
            return self, other
        if np.asarray(other).dtype.kind == "c" and self.dtype not in COMPLEX_DTYPES:
            return self.astype(_complex_result(self.dtype)), other  # x * 1j, as numpy
        if _is_inexact_array(other) and not _is_inexact(self.dtype):
            return self.astype(_float_for(other)), other
        if self.dtype == "i1" and np.asarray(other).dtype.kind in "iu":
            return self.astype(_integer_for(other)), other  # (x > 0) * 2 is an integer
        if self.dtype == "i8" and isinstance(other, (np.ndarray, np.generic)) and \
                other.dtype.kind in "iu" and other.dtype.itemsize > 1:
            # numpy integers are not weak for JAX: i8 + np.int32 is i32 (no wrap in i8)
            return self.astype(_integer_for(other)), other
        if self.dtype in HALF_DTYPES and isinstance(other, (np.ndarray, np.generic)) and \
                is_real_float(other.dtype):  # numpy floats are not weak for JAX: bf16 + f32
            wider = _float_result(self.dtype, min(_dtype_name(other.dtype), "f32",
                                                  key=_FLOAT_RANK.__getitem__))
            return self.astype(wider), other
        return self, other

    def _weakly_promoted(self, other: Tensor) -> tuple[Tensor, Tensor]:
        """One weak operand: the strong one promotes as with a Python number of the weak
        one's kind, and the weak one takes the result's dtype."""
        weak, strong = (other, self) if other.weak else (self, other)
        example = {"f": 0.5, "i": 1, "c": 0.5j}.get(NUMPY_DTYPES[weak.dtype].kind, True)
        promoted = strong._promoted(example)[0]
        weak = weak.astype(promoted.dtype)
        return (promoted, weak) if other.weak else (weak, promoted)

    def _operands(self, other: Any) -> tuple[Tensor, Tensor]:
        """``self`` and ``other`` as two tensors of a binary op: promoted (``_promoted``),
        a non-tensor ``other`` lifted to a constant (``_lift``)."""
        x, other = self._promoted(other)
        return x, x._lift(other)

    def _binary(self, op: str, other: Any, reverse: bool = False) -> Tensor:
        """``self <op> other`` (``other <op> self`` when ``reverse``), emitted into the
        innermost of the operands' builders (a closure's trace, not the enclosing one)."""
        x, y = self._operands(other)
        if x.dtype == y.dtype == "i1" and op in _BOOL_ARITHMETIC:
            return _BOOL_ARITHMETIC[op](x, y)
        out = getattr(innermost(x, y), op)(*((y, x) if reverse else (x, y)))
        if self.weak and (other.weak if isinstance(other, Tensor) else _is_python_number(other)):
            out.weak = True  # weak with weak stays weak, as JAX's ``lr * 0.5``
        return out

    def __add__(self, o):
        return self._binary("add", o)

    def __radd__(self, o):
        return self._binary("add", o, reverse=True)

    def __sub__(self, o):
        return self._binary("sub", o)

    def __rsub__(self, o):
        return self._binary("sub", o, reverse=True)

    def __mul__(self, o):
        return self._binary("mul", o)

    def __rmul__(self, o):
        return self._binary("mul", o, reverse=True)

    def _true_divisible(self, other: object = None) -> Tensor:
        """``/`` is true division (numpy, JAX): an integer operand divides as the other
        operand's float type when that is a tensor or a half-precision numpy value (``h /
        i`` is f16, as ``h * i``), else as f32."""
        if _is_inexact(self.dtype):
            return self
        if isinstance(other, Tensor) and _is_inexact(other.dtype):
            return self.astype(other.dtype)
        half = {np.dtype(np.float16): "f16", np.dtype(ml_dtypes.bfloat16): "bf16"}
        if isinstance(other, (np.ndarray, np.generic)) and other.dtype in half:
            return self.astype(half[other.dtype])
        return self.astype("f32")

    def __truediv__(self, o):
        other = o._true_divisible(self) if isinstance(o, Tensor) else o
        return self._true_divisible(o)._binary("div", other)

    def __rtruediv__(self, o):
        return self._true_divisible(o)._binary("div", o, reverse=True)

    def __pow__(self, o):
        if self.dtype in (*INT_DTYPES, "i8") and not isinstance(o, Tensor):
            exponent = np.asarray(o)
            if exponent.dtype.kind in "iu" and exponent.size and exponent.min() < 0:
                raise RlxError(f"integers to negative integer powers are not allowed (the "
                               f"exponent {o!r} on an {self.dtype} tensor; as in numpy): "
                               "cast the base to a float dtype first",
                               loc=loc_from_attr(_user_location()))
        return self._binary("pow", o)

    def __matmul__(self, o):
        return _matmul(*self._operands(o))

    def __floordiv__(self, o):
        return _divmod(*self._operands(o))[0]

    def __rfloordiv__(self, o):
        x, y = self._operands(o)
        return _divmod(y, x)[0]

    def __mod__(self, o):
        return _divmod(*self._operands(o))[1]

    def __rmod__(self, o):
        x, y = self._operands(o)
        return _divmod(y, x)[1]

    def __divmod__(self, o):
        return _divmod(*self._operands(o))

    def __rdivmod__(self, o):
        x, y = self._operands(o)
        return _divmod(y, x)

    def __neg__(self):
        return self.builder.neg(self)

    @property
    def T(self) -> Tensor:
        """All axes reversed, as numpy's and JAX's ``.T`` (a 0-d or 1-d tensor as is)."""
        if self.ndim < 2:
            return self
        return self.builder.transpose(self, perm=list(range(self.ndim))[::-1])

    @property
    def mT(self) -> Tensor:
        """The last two axes swapped (numpy's, PyTorch's and JAX's ``.mT``): a batch of
        matrices transposed."""
        if self.ndim < 2:
            raise RlxError(f".mT needs at least 2 dims, got shape {self.shape}",
                           loc=loc_from_attr(_user_location()))
        perm = list(range(self.ndim))
        perm[-2:] = perm[-2:][::-1]
        return self.builder.transpose(self, perm=perm)

    def __rpow__(self, o):
        return self._binary("pow", o, reverse=True)

    def __rmatmul__(self, o):
        x, y = self._operands(o)
        return _matmul(y, x)

    def __abs__(self):
        if self.dtype in COMPLEX_DTYPES:
            return _modulus(self)
        return self.builder.abs(self)

    def _compare(self, other: Any, predicate: str) -> Tensor:
        x, y = self._operands(other)
        return innermost(x, y).compare(x, y, predicate=predicate)

    def __lt__(self, o):
        return self._compare(o, "lt")

    def __le__(self, o):
        return self._compare(o, "le")

    def __gt__(self, o):
        return self._compare(o, "gt")

    def __ge__(self, o):
        return self._compare(o, "ge")

    def __eq__(self, o):  # type: ignore[override]
        """Elementwise, as numpy and JAX (an i1 tensor, not a Python bool)."""
        return self._compare(o, "eq")

    def __ne__(self, o):  # type: ignore[override]
        return self._compare(o, "ne")

    # -- logical operators on bool tensors (JAX's & | ^ ~ on bool arrays) ------
    def _bool_operand(self, other: Any, op: str) -> Tensor:
        """``other`` as a bool tensor of this trace; a located error for non-bools."""
        for t in (self, other):
            if isinstance(t, Tensor) and t.dtype != "i1":
                raise RlxError(f"'{op}' takes bool tensors (as in JAX on bool arrays), got "
                               f"{t.dtype}; bitwise integer operators are not supported",
                               loc=loc_from_attr(_user_location()))
        return other if isinstance(other, Tensor) else self._lift_bool(other, op)

    def _lift_bool(self, other: Any, op: str) -> Tensor:
        if np.asarray(other).dtype != np.bool_:
            raise RlxError(f"'{op}' takes bool tensors or Python bools, got "
                           f"{type(other).__name__} {other!r}"[:200],
                           loc=loc_from_attr(_user_location()))
        return self.builder.constant(np.asarray(other, dtype=bool))

    def _flag(self, value: bool) -> Tensor:
        return self.builder.constant(np.asarray(value))

    def __and__(self, o):
        other = self._bool_operand(o, "&")
        return innermost(self, other).where(self, other, self._flag(False))

    def __or__(self, o):
        other = self._bool_operand(o, "|")
        return innermost(self, other).where(self, self._flag(True), other)

    def __xor__(self, o):
        other = self._bool_operand(o, "^")
        return innermost(self, other).where(self, ~other, other)

    def __invert__(self):
        self._bool_operand(True, "~")
        return self.builder.where(self, self._flag(False), self._flag(True))

    __rand__, __ror__, __rxor__ = __and__, __or__, __xor__

    # -- methods numpy users expect ------------------------------------------
    def reshape(self, *shape: Any) -> Tensor:
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return self.builder.reshape(self, dims)

    def transpose(self, *perm: int) -> Tensor:
        """numpy's ``transpose``: axes as arguments or one sequence; none (or None) reverses."""
        order = perm[0] if len(perm) == 1 and isinstance(perm[0], (tuple, list)) or \
            perm == (None,) else perm
        return self.builder.transpose(self, perm=list(order or range(self.ndim)[::-1]))

    def astype(self, dtype: Any) -> Tensor:
        """A cast to ``dtype``: an rlx name (``"f64"``) or a numpy one (``np.float64``,
        ``"float64"``). Float to integer truncates toward zero, as numpy and JAX
        (``rlx.cast`` itself rounds half away from zero, SPEC 2.1.5).

        >>> x.astype(np.int32)   # [2.7, -2.7, 0.5] -> [2, -2, 0]   # doctest: +SKIP
        """
        name = _dtype_name(dtype)
        if name == self.dtype:
            return self
        if {name, self.dtype} & set(COMPLEX_DTYPES):
            return _complex_cast(self, name)
        truncate = self.dtype in REAL_FLOAT_DTYPES and name in ("i8", "i32", "i64")
        return self.builder.cast(_trunc(self) if truncate else self, name)

    @property
    def real(self) -> Tensor:
        """The real part (f32) of a complex tensor; a real tensor itself, as numpy."""
        return self.builder.emit("real", self) if self.dtype in COMPLEX_DTYPES else self

    @property
    def imag(self) -> Tensor:
        """The imaginary part (f32) of a complex tensor; zeros for a real one, as numpy."""
        if self.dtype in COMPLEX_DTYPES:
            return self.builder.emit("imag", self)
        return self.builder.full(self.shape, 0, self.dtype)

    def conj(self) -> Tensor:
        """The complex conjugate (a real tensor is its own)."""
        return self.builder.emit("conjugate", self) if self.dtype in COMPLEX_DTYPES else self

    conjugate = conj

    def _reduce(self, kind: str, axis: Any, keepdims: bool, options: dict[str, Any]
                ) -> Tensor:
        """``reduce_<kind>`` over ``axis`` (None: all; ``()``: none, ``self`` as numpy
        returns it). ``options`` are numpy's keywords: ``dtype`` casts first, ``out``
        must be None (what ``np.sum(t)`` passes)."""
        if self.dtype == "i1" and kind in ("max", "min") and "dtype" not in options:
            return self.astype("i32")._reduce(kind, axis, keepdims, options) != 0  # any/all
        x = _reduce_input(self, kind, options)
        axes = list(range(x.ndim)) if axis is None else (
            [axis] if isinstance(axis, (int, np.integer)) else list(axis))
        if not axes:
            return x  # numpy: reducing over no axis (or a 0-d array) is the identity
        return x.builder.emit(f"reduce_{kind}", x, axes=axes, keep_dims=keepdims)

    def sum(self, axis: Any = None, keepdims: bool = False, **options: Any) -> Tensor:
        """numpy's ``sum``; booleans count as i32 (JAX)."""
        return self._reduce("sum", axis, keepdims, options)

    def mean(self, axis: Any = None, keepdims: bool = False, **options: Any) -> Tensor:
        """numpy's ``mean``; an integer or boolean tensor averages as f32 (JAX)."""
        return self._reduce("mean", axis, keepdims, options)

    def max(self, axis: Any = None, keepdims: bool = False, **options: Any) -> Tensor:
        return self._reduce("max", axis, keepdims, options)

    def min(self, axis: Any = None, keepdims: bool = False, **options: Any) -> Tensor:
        return self._reduce("min", axis, keepdims, options)

    def prod(self, axis: Any = None, keepdims: bool = False, **options: Any) -> Tensor:
        return self._reduce("prod", axis, keepdims, options)

    def argmax(self, axis: int | None = None, out: None = None, *, keepdims: bool = False
               ) -> Tensor:
        """numpy's ``argmax`` (``rlx.nn.argmax``; so ``np.argmax(t)`` works too)."""
        from rlx_mlir.nn import argmax

        _no_out("argmax", out)
        return argmax(self, axis, keepdims)

    def argmin(self, axis: int | None = None, out: None = None, *, keepdims: bool = False
               ) -> Tensor:
        """numpy's ``argmin`` (``rlx.nn.argmin``)."""
        from rlx_mlir.nn import argmin

        _no_out("argmin", out)
        return argmin(self, axis, keepdims)

    def var(self, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
            keepdims: bool = False) -> Tensor:
        """numpy's ``var`` (``ddof=1``: the unbiased estimate); integers average as f32
        (``np.var(t)`` works too)."""
        _no_out("var", out)
        x = self.astype(dtype) if dtype is not None else self
        complex_ = x.dtype in COMPLEX_DTYPES  # numpy: the real mean of |z - mean|^2
        x = x.astype("f32") if x.dtype not in FLOAT_DTYPES and not complex_ else x
        centred = x - x.mean(axis, keepdims=True)
        squares = centred.real * centred.real + centred.imag * centred.imag if complex_ \
            else centred * centred
        count = int(np.prod([x.shape[a] for a in _axes_of(axis, x.ndim)]))
        out = squares.sum(axis, keepdims=keepdims) / float(max(count - ddof, 0))
        return out.astype(self.dtype) if self.dtype in HALF_DTYPES else out  # one rounding

    def std(self, axis: Any = None, dtype: Any = None, out: None = None, ddof: int = 0,
            keepdims: bool = False) -> Tensor:
        """numpy's ``std``: the square root of :meth:`var`."""
        return self.builder.sqrt(self.var(axis, dtype, out, ddof, keepdims))

    def any(self, axis: Any = None, out: None = None, keepdims: bool = False) -> Tensor:
        """numpy's ``any``: whether some element along ``axis`` is nonzero (bool)."""
        _no_out("any", out)
        return self._truth().max(axis, keepdims=keepdims) > 0

    def all(self, axis: Any = None, out: None = None, keepdims: bool = False) -> Tensor:
        """numpy's ``all``: whether every element along ``axis`` is nonzero (bool)."""
        _no_out("all", out)
        return self._truth().min(axis, keepdims=keepdims) > 0

    def _truth(self) -> Tensor:
        return (self if self.dtype == "i1" else self != 0).astype("i32")

    def clip(self, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 (numpy's names)
        """numpy's ``clip`` (``rlx.nn.clip``)."""
        from rlx_mlir.nn import clip

        return clip(self, min, max)

    def squeeze(self, axis: int | Sequence[int] | None = None) -> Tensor:
        """numpy's ``squeeze``: size-1 axes (all of them, or ``axis``) removed."""
        axes = ([a for a, n in enumerate(self.shape) if n == 1] if axis is None
                else _axes_of(axis, self.ndim))
        for a in axes:
            if self.shape[a] != 1:
                raise RlxError(f"squeeze: axis {a} has size {self.shape[a]}, not 1",
                               loc=loc_from_attr(_user_location()))
        return self.reshape([n for a, n in enumerate(self.shape) if a not in axes])

    def ravel(self) -> Tensor:
        """The elements in one axis (row-major)."""
        return self.reshape(-1)

    flatten = ravel

    def swapaxes(self, axis1: int, axis2: int) -> Tensor:
        """numpy's ``swapaxes``."""
        perm = list(range(self.ndim))
        a, b = _axes_of((axis1, axis2), self.ndim)
        perm[a], perm[b] = perm[b], perm[a]
        return self.transpose(perm)

    def __pos__(self) -> Tensor:
        return self

    def __getitem__(self, index: Any) -> Tensor:
        """Integers and unit-step slices (``narrow``), ``None`` (new axis), ``...``, and
        an integer Tensor or numpy integer array on the leading axis (``gather``)."""
        from rlx_mlir.frontend.indexing import getitem

        if isinstance(index, Tensor) and index.dtype == "i8":
            index = index.astype("i32")
        if isinstance(index, Tensor) and index.dtype not in INT_DTYPES:
            raise RlxError(_INDEX_DTYPE_HINT.get(index.dtype, "index tensors must have an "
                           f"integer dtype, got {index.dtype}"),
                           loc=loc_from_attr(_user_location()))
        return getitem(self, index)

    def __setitem__(self, index: Any, value: Any):
        raise RlxError("tensors are immutable: `x[i] = v` cannot be traced; build a new "
                       "tensor instead, e.g. rlx.nn.where(mask, v, x) or rlx.nn.concat",
                       loc=loc_from_attr(_user_location()))

    # -- what tracing cannot do -------------------------------------------------
    def __bool__(self):
        raise RlxError(
            "data-dependent Python control flow on a traced value: the value is not known "
            "while tracing; use rlx_mlir.nn.where, rlx.cond or rlx.while_loop instead, or, "
            "for a flag that picks the program (training=True), pass it to rlx.jit as a "
            "static argument (static_argnames=('training',))",
            loc=loc_from_attr(_user_location()))

    def __float__(self):
        raise RlxError("cannot convert a traced value to a Python number while tracing",
                       loc=loc_from_attr(_user_location()))

    __int__ = __float__
    __index__ = __float__

    def __iter__(self):
        raise RlxError("cannot iterate over a traced value; index it or use a scan",
                       loc=loc_from_attr(_user_location()))

    def __array__(self, *args: Any, **kwargs: Any):
        raise RlxError("cannot convert a traced value to a numpy array while tracing (use "
                       "rlx.nn functions on it, not numpy's; a Python list of traced values, "
                       "e.g. a parameter given as a list, is one tensor with "
                       "rlx.nn.stack(values), or pass a numpy array instead of the list)",
                       loc=loc_from_attr(_user_location()))

    def __len__(self) -> int:
        if not self.shape:
            raise RlxError("len() of a rank-0 tensor", loc=loc_from_attr(_user_location()))
        return self.shape[0]

    __hash__ = object.__hash__


FULL_SPLAT_MIN = 4096
"""``Builder.full`` of at least this many elements is a scalar constant + ``rlx.expand``."""


class Builder:
    """Builds one ``func.func`` (``name``) into ``module`` (a new one by default)."""

    def __init__(self, name: str = "main", module: ModuleOp | None = None,
                 block: Block | None = None):
        if module is not None and _defines(module, name):
            raise RlxError(f"the module already has a function @{name}: pick another name",
                           loc=loc_from_attr(_user_location()))
        self.name = name
        self.module = module if module is not None else ModuleOp([])
        self.block = block if block is not None else Block()
        self._arg_attrs: list[DictionaryAttr] = []
        self._done = False
        self.location: Attribute | None = None
        """When set (by transforms), the location given to every emitted op."""
        self.capture: Callable[[Tensor], Tensor] | None = None
        """When set (by the tracing frontend), what a Tensor of another builder becomes
        here (a closure over an enclosing trace's value); unset, such a use is an error.
        Its ``outer`` attribute, if any, is the enclosing builder (see ``innermost``)."""

    @classmethod
    def appending_to(cls, block: Block, location: Attribute | None = None) -> Builder:
        """A builder that appends ops to an existing ``block`` (used by transforms)."""
        b = cls(module=ModuleOp([]), block=block)
        b.location = location
        return b

    def wrap(self, value: SSAValue) -> Tensor:
        return Tensor(self, value)

    # -- arguments -----------------------------------------------------------
    def input(self, name: str, shape: Sequence[int], dtype: str = "f32") -> Tensor:
        """A runtime-fed argument (RLX's Input); ``dtype`` an rlx or numpy dtype name."""
        return self._arg(name, shape, dtype, param=False)

    def param(self, name: str, shape: Sequence[int], dtype: str = "f32") -> Tensor:
        """A trainable parameter (``rlx.param``): differentiated, shared under vmap."""
        return self._arg(name, shape, dtype, param=True)

    def _arg(self, name: str, shape: Sequence[int], dtype: str, param: bool) -> Tensor:
        try:
            arg_type = tensor(shape, _dtype_name(dtype))
        except RlxError:
            raise RlxError(f"argument '{name}': unknown dtype {dtype!r} (expected one of "
                           f"{', '.join(NUMPY_DTYPES)} or the numpy equivalent)",
                           loc=loc_from_attr(_user_location())) from None
        except VerifyException as e:
            raise RlxError(f"argument '{name}': {e}", loc=loc_from_attr(_user_location())
                           ) from None
        arg = self.block.insert_arg(arg_type, len(self.block.args))
        arg.name_hint = name if name.isidentifier() else None
        entries: dict[str, Any] = {"rlx.name": StringAttr(name)}
        if param:
            entries["rlx.param"] = UnitAttr()
        self._arg_attrs.append(DictionaryAttr(entries))
        return Tensor(self, arg)

    # -- ops -----------------------------------------------------------------
    def emit(self, op_name: str, *operands: Any, out: Sequence[TensorType] | None = None,
             **attrs: Any) -> Tensor | tuple[Tensor, ...]:
        """Append ``rlx.<op_name>`` with inferred result types."""
        op_cls = op_by_name(op_name)
        values = [self._value(o) for o in operands if o is not None]
        half, widen = _widened(op_cls, values, out)
        if widen:
            return self._emit_widened(op_cls, values, out, half, attrs)
        loc = self.location if self.location is not None else _user_location()
        try:
            _check_operand_count(op_cls, len(values))
            op = op_cls.make(values, attrs, out)
        except (VerifyException, TypeError) as e:
            raise RlxError(op_message(op_cls.name, e), loc=loc_from_attr(loc)) from None
        if loc is not None:
            op.location = loc
        self.block.add_op(op)
        results = tuple(Tensor(self, r) for r in op.results)
        return results[0] if len(results) == 1 else results

    def _emit_widened(self, op_cls: type, values: Sequence[SSAValue],
                      out: Sequence[TensorType] | None, narrow: str | None,
                      attrs: dict[str, Any]) -> Tensor | tuple[Tensor, ...]:
        """f16/bf16/i8 are storage types: cast the operands to f32/i32, run the op, and
        round its results of that dtype back to ``narrow`` (per op, as PyTorch eager on a
        CPU computes halves; i8 arithmetic wraps as numpy's)."""
        def wide(t: TensorType) -> TensorType:
            return tensor(shape_of(t), STORAGE_DTYPES.get(dtype_of(t), dtype_of(t)))

        operands = [self.cast(Tensor(self, v), STORAGE_DTYPES[dtype_of(v.type)])
                    if dtype_of(v.type) in STORAGE_DTYPES else Tensor(self, v) for v in values]
        result = self.emit(op_cls.name.removeprefix("rlx."), *operands,
                           out=None if out is None else [wide(t) for t in out], **attrs)
        results = result if isinstance(result, tuple) else (result,)
        if (narrow == "i8" and op_cls.ACCUMULATES) or op_cls.INDEX_RESULTS:
            return result  # sums of i8 are i32, as JAX's (numpy's are i64); indices
        back = STORAGE_DTYPES.get(narrow or "")
        narrowed = tuple(r.astype(narrow) if back and r.dtype == back else r for r in results)
        return narrowed if isinstance(result, tuple) else narrowed[0]

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            op_by_name(name)
        except KeyError:
            raise AttributeError(f"Builder has no method or rlx op named '{name}'") from None
        return lambda *operands, **attrs: self.emit(name, *operands, **attrs)

    def _value(self, o: Any) -> SSAValue:
        if isinstance(o, Tensor):
            if o.builder.block is not self.block:
                if self.capture is None:
                    raise RlxError(
                        "a Tensor from another Builder was used (a scan or cond body may "
                        "use the builder's tensors; a while_loop body cannot: carry them in "
                        "its state)", loc=loc_from_attr(_user_location()))
                return self.capture(o).value
            return o.value
        if isinstance(o, SSAValue):
            return o
        if isinstance(o, np.ndarray):
            return self.constant(o).value
        raise RlxError(f"expected a tensor or numpy array operand, got {type(o).__name__} "
                       f"{o!r}"[:200] + (" (convert it with np.asarray(..., np.float32))"
                                         if isinstance(o, (list, tuple)) else ""),
                       loc=loc_from_attr(_user_location()))

    # -- ops whose result type is not inferred from operands -----------------
    def reshape(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        shape = _resolve_reshape(x.shape, shape)
        return self.emit("reshape", x, out=[tensor(shape, x.dtype)])  # type: ignore[return-value]

    def expand(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        return self.emit("expand", x, out=[tensor(shape, x.dtype)])  # type: ignore[return-value]

    def cast(self, x: Tensor, dtype: str) -> Tensor:
        return self.emit("cast", x, out=[tensor(x.shape, dtype)])  # type: ignore[return-value]

    def scatter_add(self, updates: Tensor, indices: Tensor, dim_size: int, axis: int = 0
                    ) -> Tensor:
        """``out[idx[i]] += updates[i]`` along ``axis``; ``dim_size`` is the output extent."""
        shape = list(updates.shape)
        shape[axis] = dim_size
        return self.emit(  # type: ignore[return-value]
            "scatter_add", updates, indices, axis=axis, out=[tensor(shape, updates.dtype)]
        )

    # -- ops with regions ------------------------------------------------------
    def region(self, arg_types: Sequence[TensorType], body) -> Region:
        """A single-block region: ``body(builder, *args)`` returns what it yields."""
        block = Block(arg_types=list(arg_types))
        inner = Builder.appending_to(block, self.location)
        out = body(inner, *[inner.wrap(a) for a in block.args])
        outs = out if isinstance(out, (tuple, list)) else [out]
        inner.emit("yield", *outs)
        return Region(block)

    def _open_region(self, arg_types: Sequence[TensorType], body) -> Region:
        """:meth:`region` whose body may use this builder's tensors (and those it captures)
        as values from above: ``rlx.custom_fn``'s regions are not isolated."""
        block = Block(arg_types=list(arg_types))
        inner = Builder.appending_to(block, self.location)
        inner.capture = _FromAbove(self)
        try:
            out = body(inner, *[inner.wrap(a) for a in block.args])
            outs = out if isinstance(out, (tuple, list)) else [out]
            inner.emit("yield", *outs)
        finally:
            inner.capture = None
        return Region(block)

    def _emit_with_regions(self, op_name: str, operands: Sequence[Tensor],
                           regions: Sequence[Region], out=None, **attrs: Any):
        op_cls = op_by_name(op_name)
        loc = self.location if self.location is not None else _user_location()
        try:
            op = op_cls.make([self._value(o) for o in operands], attrs, out, regions)
            op.verify()
        except (VerifyException, TypeError) as e:
            raise RlxError(op_message(op_cls.name, e), loc=loc_from_attr(loc)) from None
        if loc is not None:
            op.location = loc
        self.block.add_op(op)
        results = tuple(Tensor(self, r) for r in op.results)
        return results[0] if len(results) == 1 else results

    def scan(self, init: Tensor, body, length: int, xs: Sequence[Tensor] = (),
             bcasts: Sequence[Tensor] = (), save_trajectory: bool = False,
             num_checkpoints: int = 0) -> Tensor:
        """``c = init; for t: c = body(b, c, *bcasts, *(x[t] for x in xs))``.

        A tensor of this builder (or an enclosing one) that ``body`` uses becomes one more
        broadcast input, after ``bcasts``: the region stays closed, as the op requires.

        >>> # b.scan(x0, lambda b, c, x: c + x, length=4, xs=[xs])
        """
        step_types = [tensor(x.shape[1:], x.dtype) for x in xs]
        types = [init.type, *(v.type for v in bcasts), *step_types]
        region, captured = self._closed_region(types, body, 1 + len(bcasts))
        return self._emit_with_regions(
            "scan", [init, *bcasts, *captured, *xs], [region], length=length,
            num_xs=len(xs) or None, save_trajectory=save_trajectory or None,
            num_checkpoints=num_checkpoints or None)

    def cond(self, pred: Tensor, then_body, else_body, *captured: Tensor):
        """``rlx.if``: both bodies take ``captured`` and return the same types (a tensor
        of this builder that a body uses is captured too, for both)."""
        types = [c.type for c in captured]
        then_region, more = self._closed_region(types, then_body, len(types))
        else_region, also = self._closed_region(types, else_body, len(types))
        for t in also:  # each branch takes every capture: then's, then else's
            then_region.block.insert_arg(t.type, len(then_region.block.args))
        for t in reversed(more):
            else_region.block.insert_arg(t.type, len(types))
        out = [v.type for v in then_region.block.last_op.operands]
        return self._emit_with_regions("if", [pred, *captured, *more, *also],
                                       [then_region, else_region], out=out)

    def _closed_region(self, arg_types: Sequence[TensorType], body,
                       at: int) -> tuple[Region, list[Tensor]]:
        """:meth:`region` whose body may use tensors of this builder: each becomes a new
        block argument, inserted from position ``at`` on; returns the region and the
        captured tensors (the operands that feed those arguments)."""
        block = Block(arg_types=list(arg_types))
        inner = Builder.appending_to(block, self.location)
        capture = _RegionCapture(inner, self, at)
        inner.capture = capture
        out = body(inner, *[inner.wrap(a) for a in block.args])
        outs = out if isinstance(out, (tuple, list)) else [out]
        inner.emit("yield", *outs)
        inner.capture = None
        return Region(block), capture.tensors

    def while_loop(self, init: Tensor, cond, body, max_iterations: int | None = None):
        """``rlx.while``: ``cond(b, s)`` returns a one-element i1, ``body(b, s)`` the state."""
        return self._emit_with_regions(
            "while", [init], [self.region([init.type], cond), self.region([init.type], body)],
            max_iterations=max_iterations)

    def custom_fn(self, primals: Sequence[Tensor], fwd, vjp=None, jvp=None) -> Tensor:
        """``rlx.custom_fn``: ``fwd(b, *primals)``; ``vjp(b, *primals, y, g)`` returns one
        gradient per primal; ``jvp(b, *primals, *tangents)`` the result tangent. The bodies
        may use this builder's tensors (values from above, never differentiated)."""
        types = [p.type for p in primals]
        fwd_region = self._open_region(types, fwd)
        out = fwd_region.block.last_op.operands[0].type
        regions = [fwd_region]
        if vjp is not None:
            regions.append(self._open_region([*types, out, out], vjp))
        if jvp is not None:
            regions.append(self._open_region([*types, *types], jvp))
        return self._emit_with_regions(
            "custom_fn", primals, regions, out=[out],
            has_vjp=True if vjp is not None else None, has_jvp=True if jvp is not None else None)

    def constant(self, value: np.ndarray | float, dtype: str | None = None) -> Tensor:
        if dtype and np.iscomplexobj(value) and not np.iscomplexobj(
                np.empty(0, NUMPY_DTYPES[dtype])):
            shown = repr(np.asarray(value).tolist())[:60]
            raise RlxError(f"cannot use the complex constant {shown} as {dtype}: its "
                           "imaginary part would be lost (rlx does not promote real "
                           "tensors to complex)", loc=loc_from_attr(_user_location()))
        _refuse_extended_precision(value)
        with np.errstate(over="ignore"):  # f16_tensor + 1e6 is inf, as numpy's f16
            array = np.asarray(value, dtype=NUMPY_DTYPES[dtype] if dtype else None)
        if array.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            array = array.astype(np.float32)
        if array.dtype.kind == "c":  # rlx.complex of two real constants
            part = "f32" if array.dtype == np.complex64 else "f64"
            return self.complex(self.constant(array.real, part), self.constant(array.imag, part))
        return self.emit("constant", value=to_attr(array))  # type: ignore[return-value]

    def full(self, shape: Sequence[int], value: float, dtype: str = "f32") -> Tensor:
        """``shape`` filled with ``value``: past :data:`FULL_SPLAT_MIN` elements a scalar
        constant expanded (the zero cotangent of a scan's unused trajectory, ``[L - 1,
        *carry]``, was a dense attribute of every element: seconds of tracing and GBs)."""
        shape = tuple(shape)
        if math.prod(shape) >= FULL_SPLAT_MIN:
            return self.expand(self.constant(np.full((), value, dtype=NUMPY_DTYPES[dtype])),
                               shape)
        return self.constant(np.full(shape, value, dtype=NUMPY_DTYPES[dtype]))

    # -- finishing -----------------------------------------------------------
    def ret(self, *values: Tensor) -> func.FuncOp:
        """Return ``values`` and add the finished function to the module."""
        if self._done:
            raise RlxError(f"function @{self.name} was already returned")
        self.block.add_op(func.ReturnOp(*[self._value(v) for v in values]))
        inputs = [a.type for a in self.block.args]
        outputs = [self._value(v).type for v in values]
        f = func.FuncOp(
            self.name, (inputs, outputs), Region(self.block),
            arg_attrs=ArrayAttr(self._arg_attrs),
        )
        self.module.body.block.add_op(f)
        self._done = True
        return f

    def __str__(self) -> str:
        return to_text(self.module)


def nesting_depth(builder: Builder) -> int:
    """How many enclosing builders ``builder`` captures from (through ``capture.outer``):
    0 for a builder that is not nested in a trace."""
    depth = 0
    while builder.capture is not None:
        depth += 1
        builder = getattr(builder.capture, "outer", None)
        if builder is None:
            break
    return depth


def innermost(*operands: Any) -> Builder:
    """The builder to emit an op on ``operands`` into: of the Tensors' builders, the most
    deeply nested (``a * y`` with ``a`` of an enclosing trace and ``y`` of a closure traced
    inside it goes into the closure's trace, which captures ``a``); ties go to the first."""
    builders = [o.builder for o in operands if isinstance(o, Tensor)]
    if not builders:
        kinds = ", ".join(sorted({type(o).__name__ for o in operands}))
        raise RlxError(f"expected at least one tensor operand (a traced Tensor; outside a "
                       f"trace rlx.nn also takes numpy arrays), got {kinds}"
                       + (" (convert lists with np.asarray(..., np.float32))"
                          if "list" in kinds or "tuple" in kinds else ""),
                       loc=loc_from_attr(_user_location()))
    return max(builders, key=nesting_depth)


def _refuse_extended_precision(value: Any) -> None:
    """numpy's float128 / complex256 have no rlx dtype; the usual way to get one by
    mistake is ``np.ones(3, x.dtype)`` with an f16 tensor (numpy reads ``"f16"`` as a
    16-byte float), which was silently rounded to the tensor's dtype."""
    if isinstance(value, (np.ndarray, np.generic)) and value.dtype.kind in "fc" \
            and value.dtype.itemsize > (8 if value.dtype.kind == "f" else 16):
        raise RlxError(f"numpy {value.dtype} data has no rlx dtype (numpy reads the dtype "
                       "string 'f16' as float128: use np.float16, ml_dtypes.bfloat16 or "
                       "rlx.nn.ones_like / zeros_like)", loc=loc_from_attr(_user_location()))


def _dtype_name(dtype: Any) -> str:
    """rlx's name of a dtype given by rlx name or numpy dtype (``np.float64`` -> ``f64``)."""
    if isinstance(dtype, str) and dtype in NUMPY_DTYPES:
        return dtype
    try:
        wanted = np.dtype(dtype)
    except TypeError:
        wanted = None  # not a dtype (np.dtype(None) would be float64)
    for name, numpy_dtype in NUMPY_DTYPES.items():
        if wanted is not None and numpy_dtype == wanted:
            return name
    raise RlxError(f"unsupported dtype {dtype!r} (expected one of "
                   f"{', '.join(NUMPY_DTYPES)} or the numpy equivalent)",
                   loc=loc_from_attr(_user_location()))


_INDEX_DTYPE_HINT = {
    "i1": "boolean-mask indexing is not supported while tracing (the result shape would "
          "depend on the mask's values, and shapes must be static); use "
          "rlx.nn.where(mask, x, 0.0) to mask",
}


def _count_bools(x: Tensor) -> Tensor:
    """Booleans as i32 (JAX's ``sum`` and ``prod`` of a bool array are i32)."""
    return x.astype("i32") if x.dtype == "i1" else x


def _as_float(x: Tensor) -> Tensor:
    """An integer or boolean tensor as f32 (JAX's ``mean`` of one is f32)."""
    return x if _is_inexact(x.dtype) else x.astype("f32")


_REDUCE_INPUT: dict[str, Callable[[Tensor], Tensor]] = {
    "sum": _count_bools, "prod": _count_bools, "mean": _as_float,
}


def _axes_of(axis: Any, ndim: int) -> list[int]:
    """``axis`` (None: all, an int, or a sequence) as a list of axes in ``[0, ndim)``."""
    axes = range(ndim) if axis is None else [axis] if isinstance(axis, (int, np.integer)) \
        else list(axis)
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not -ndim <= a < max(ndim, 1):
            raise RlxError(f"axis {a!r} is out of range for rank {ndim}",
                           loc=loc_from_attr(_user_location()))
    return [int(a) % max(ndim, 1) for a in axes]


def _no_out(kind: str, out: object) -> None:
    if out is not None:
        raise RlxError(f"{kind}: out= is not supported (tensors are immutable; use the "
                       "returned tensor)", loc=loc_from_attr(_user_location()))


def _reduce_input(x: Tensor, kind: str, options: dict[str, Any]) -> Tensor:
    """What a ``kind`` reduction of ``x`` reduces: cast to ``options["dtype"]`` if given,
    else converted as JAX does (``_REDUCE_INPUT``); numpy's other keywords are errors
    (``out`` and friends: tensors are immutable)."""
    dtype = options.pop("dtype", None)
    _no_out(kind, options.pop("out", None))
    if options:
        raise RlxError(f"{kind}: unsupported keyword argument {', '.join(options)} "
                       "(supported: axis, keepdims, dtype)", loc=loc_from_attr(_user_location()))
    if dtype is not None:
        return x.astype(dtype)
    return _REDUCE_INPUT.get(kind, lambda t: t)(x)


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """numpy's ``@`` on two (promoted) tensors, a 1-d operand included."""
    if a.ndim == 1 or b.ndim == 1:
        return _vector_matmul(a, b)
    return innermost(a, b).matmul(a, b)


def _vector_matmul(a: Tensor, b: Tensor) -> Tensor:
    """numpy's ``@`` with a 1-d operand: a vector is a row (left) or a column (right) for
    the product, and that axis is dropped from the result."""
    left = a.reshape(1, -1) if a.ndim == 1 else a
    right = b.reshape(-1, 1) if b.ndim == 1 else b
    out = innermost(left, right).matmul(left, right)
    shape = list(out.shape)
    if b.ndim == 1:
        shape.pop(-1)
    if a.ndim == 1:
        shape.pop(-2 if b.ndim != 1 else -1)
    return out.reshape(*shape) if shape else out.reshape(())


def _where(cond: Tensor, x: Tensor, y: Any) -> Tensor:
    """``cond ? x : y`` elementwise (``y`` may be a number, of ``x``'s dtype)."""
    y = x._lift(y)
    return innermost(cond, x, y).where(cond, x, y)


def _sign_differs(r: Tensor, b: Tensor) -> Tensor:
    """``r != 0 and sign(r) != sign(b)``: where a truncated remainder needs the floor fix."""
    return _where(r < 0, b > 0, _where(r > 0, b < 0, r < 0))


def _floor(x: Tensor) -> Tensor:
    """``floor(x)`` of a float tensor from ``rlx.round`` (half away from zero), with a
    zero derivative (``rlx.round``'s gradient is straight-through)."""
    r = x.builder.stop_gradient(x.builder.round(x))
    return _where(r > x, r - 1.0, r)


def _trunc(x: Tensor) -> Tensor:
    """``x`` rounded toward zero (float)."""
    return _where(x < 0, -_floor(-x), _floor(x))


def _divmod(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """numpy's ``divmod`` (``//`` and ``%``) of two tensors of one dtype: the quotient
    rounded toward -inf and the remainder with the sign of ``b``."""
    if a.dtype in COMPLEX_DTYPES:
        raise RlxError("// and % are not defined for complex tensors (as in numpy)",
                       loc=loc_from_attr(_user_location()))
    if a.dtype == "i1":
        a, b = a.astype("i32"), b.astype("i32")  # numpy: bool // bool is integer
    if a.dtype in ("f16", "bf16"):  # one computation in f32, rounded once: each op of the
        half = a.dtype              # formula rounded to half (bf16 66 // 0.664 gave 98, not 99)
        q, r = _float_divmod(a.astype("f32"), b.astype("f32"))
        return q.astype(half), r.astype(half)
    return (_float_divmod if _is_inexact(a.dtype) else _int_divmod)(a, b)


def _div(a: Tensor, b: Tensor) -> Tensor:
    """``rlx.div``: true division of floats, truncating division of integers."""
    return innermost(a, b).div(a, b)


def _int_divmod(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """Integer ``divmod`` from the truncating ``rlx.div``; a division by zero gives 0
    and 0, as numpy does."""
    q = _div(a, b)
    r = a - q * b
    fix = _sign_differs(r, b)
    return _where(fix, q - 1, q), _where(b != 0, _where(fix, r + b, r), 0)


def _float_divmod(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """numpy's float ``divmod`` (``npy_divmod``) in ``a``'s dtype, from an exact ``fmod``."""
    mod = _fmod(a, b)
    quotient = _div(a, b)
    div = _div(a - mod, b)
    fix = _sign_differs(mod, b)
    signed_zero = _where(b < 0, a._lift(-0.0), 0.0)  # numpy: copysign(0, b)
    # at 0, that zero with mod's gradient (JAX's): sg(mod) - mod is +0, and -0 - +0 is -0
    exact_zero = signed_zero - (mod.builder.stop_gradient(mod) - mod)
    mod = _where(fix, mod + b, _where(mod == 0, exact_zero, mod))
    div = _where(fix, div - 1.0, div)
    floor = _floor(div)
    floor = _where(div - floor > 0.5, floor + 1.0, floor)
    floor = _where(div == 0, quotient * 0.0, floor)  # numpy: copysign(0, a / b)
    floor = floor.builder.stop_gradient(_where(b == 0, quotient, floor))  # JAX: zero
    return floor, mod


def _fmod(a: Tensor, b: Tensor) -> Tensor:
    """C's ``fmod(a, b)`` (``a - trunc(a / b) * b``, the sign of ``a``), computed in f64
    with the product exact (Dekker), so exact while ``|a / b| < 2**53``."""
    dtype = a.dtype
    a, b = a.astype("f64"), b.astype("f64")
    n = _trunc(_div(a, b))  # the true quotient's, or one too far from 0 (a / b rounded up)
    r = _minus_product(a, n, b)
    step = _where(a > 0, abs(b), -abs(b))
    r = _where(_sign_differs(r, a), r + step, r)
    return _where(n == 0, a, r).astype(dtype)  # |a| < |b| (b = inf included): a


def _split(x: Tensor) -> tuple[Tensor, Tensor]:
    """Veltkamp's split of an f64 ``x`` into two 26-bit halves, ``x = hi + lo``."""
    c = x * 134217729.0  # 2**27 + 1
    hi = c - (c - x)
    return hi, x - hi


def _minus_product(a: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """``a - x * y`` for f64 tensors, exact when the result is representable and
    ``x * y`` is within a factor 2 of ``a`` (Dekker's two-product, no FMA needed)."""
    p = x * y
    (xh, xl), (yh, yl) = _split(x), _split(y)
    err = xl * yl - (((p - xh * yh) - xl * yh) - xh * yl)  # x * y - p, exactly
    return (a - p) - err


_INTEGER_WIDTH = {"i1": 0, "i8": 1, "i32": 2, "i64": 3}


_TORCH_SPELLINGS = {
    "view": "use .reshape(...)", "permute": "use .transpose(...)",
    "unsqueeze": "index with None, e.g. x[:, None]", "item": "return the tensor and "
    "read the value from the result", "float": "use .astype(np.float32)",
    "double": "use .astype(np.float64)", "long": "use .astype(np.int64)",
    "int": "use .astype(np.int32)", "dim": "use .ndim", "numel": "use .size",
    "detach": "use rlx.nn.stop_gradient(x)", "numpy": "return the tensor: compiled "
    "functions return numpy arrays", "contiguous": "not needed (drop it)",
    "t": "use .T", "masked_fill": "use rlx.nn.where(mask, value, x)",
}
"""PyTorch tensor methods a port may call, and the rlx (numpy) way to say each."""


def _bool_subtract(a: Tensor, b: Tensor) -> Tensor:
    raise RlxError("boolean subtract, the `-` operator, is not supported (as in numpy): use "
                   "`^` for exclusive or, or cast to a number first",
                   loc=loc_from_attr(_user_location()))


_BOOL_ARITHMETIC: dict[str, Callable[[Tensor, Tensor], Tensor]] = {
    "add": lambda a, b: a | b, "mul": lambda a, b: a & b, "sub": _bool_subtract,
}
"""numpy's and JAX's arithmetic between two bool tensors: ``+`` is or, ``*`` is and."""


def _integer_for(number: Any) -> str:
    """The integer dtype a bool tensor takes with ``number``: i32 for a Python int (JAX's
    default), a numpy integer's own width otherwise."""
    if isinstance(number, int):
        return "i32"
    return "i64" if np.asarray(number).dtype.itemsize > 4 else "i32"


def _wider_integer(a: str, b: str) -> str | None:
    """The wider of two different integer (or bool) dtypes; None otherwise."""
    if a == b or a not in _INTEGER_WIDTH or b not in _INTEGER_WIDTH:
        return None
    return max(a, b, key=_INTEGER_WIDTH.__getitem__)


def _complex_cast(x: Tensor, dtype: str) -> Tensor:
    """To ``c64`` from a real or integer tensor (imaginary part 0); from ``c64`` to a
    real dtype is an error (numpy drops the imaginary part with only a warning)."""
    if x.dtype in COMPLEX_DTYPES:
        if dtype == "i1":  # numpy: nonzero
            return x != 0
        if dtype in COMPLEX_DTYPES:  # c64 <-> c128: each part
            return x.builder.complex(x.real.astype(REAL_OF[dtype]), x.imag.astype(REAL_OF[dtype]))
        raise RlxError(f"cannot cast a complex tensor to {dtype}: take .real, .imag or "
                       "abs(z) ** 2 (rlx.nn.complex_norm_sq) first",
                       loc=loc_from_attr(_user_location()))
    part = REAL_OF[dtype]
    return x.builder.complex(x.astype(part), x.builder.full((), 0.0, part))


def _modulus(z: Tensor) -> Tensor:
    """``|z|`` as numpy's ``abs``: ``a sqrt((re/a)^2 + (im/a)^2)`` with ``a`` the larger
    part's magnitude (no overflow of ``re^2`` near the float maximum, no underflow near
    the minimum). The expression is ``|z|`` for any ``a > 0``, so ``a`` needs no gradient."""
    b = z.builder
    big = b.stop_gradient(b.max(abs(z.real), abs(z.imag)))
    scale = _where(big == 0, b.full((), 1.0, big.dtype), big)
    re, im = z.real / scale, z.imag / scale  # real quotients: a subnormal scale is exact
    modulus = scale * b.sqrt(re * re + im * im)
    return _where(big == np.inf, big, modulus)  # an infinite part: inf, even with a NaN


def _complex_result(*dtypes: str) -> str:
    """numpy's complex result: c128 when any operand is f64 or c128, else c64."""
    return "c128" if {"f64", "c128"} & set(dtypes) else "c64"


def _is_inexact_array(value: Any) -> bool:
    """A float (bf16 included) or complex numpy value."""
    dtype = np.asarray(value).dtype
    return dtype.kind == "c" or is_real_float(dtype)


def _float_for(value: Any) -> str:
    """The float an integer tensor becomes next to a float numpy ``value``: its own dtype
    when f16/bf16, else f32 (numpy floats are weak, as Python's)."""
    name = {v: k for k, v in NUMPY_DTYPES.items()}.get(np.asarray(value).dtype)
    return name if name in HALF_DTYPES else "f32"


def _is_inexact(dtype: str) -> bool:
    """A float or complex dtype (numpy's "inexact")."""
    return dtype in (*REAL_FLOAT_DTYPES, *COMPLEX_DTYPES)


_FLOAT_RANK = {"f16": 1, "bf16": 1, "f32": 2, "f64": 3}



def _float_result(a: str, b: str) -> str:
    """JAX's promotion of two real floats: the wider one; f16 with bf16 is f32."""
    if a == b:
        return a
    ra, rb = _FLOAT_RANK[a], _FLOAT_RANK[b]
    return "f32" if ra == rb else (a if ra > rb else b)


def _widened(op_cls: type, values: Sequence[SSAValue], out: Sequence[TensorType] | None
             ) -> tuple[str | None, bool]:
    """``(narrow, widen)``: whether ``op_cls`` on ``values`` computes in a wider dtype (an
    operand or given result has a storage dtype, f16/bf16/i8, and the op is not one that
    takes them, such as ``rlx.cast``), and the one storage dtype its results return to
    (None when several mix)."""
    if op_cls.TAKES_STORAGE:
        return None, False
    dtypes = {dtype_of(t) for t in [v.type for v in values] + list(out or ())
              if isinstance(t, TensorType)}
    if dtypes & {STORAGE_DTYPES[d] for d in dtypes & set(STORAGE_DTYPES)}:
        return None, bool(dtypes & set(STORAGE_DTYPES))  # a wide operand: stay wide
    types = [v.type for v in values] + list(out or ())
    halves = {dtype_of(t) for t in types if isinstance(t, TensorType)} & set(STORAGE_DTYPES)
    return (next(iter(halves)) if len(halves) == 1 else None), bool(halves)


def _check_operand_count(op_cls: type, given: int) -> None:
    """A TypeError (reported as a located RlxError) when ``given`` operands cannot fill
    the op's operand list (``b.relu()``)."""
    from xdsl.irdl import OptOperandDef, VarOperandDef

    defs = op_cls.get_irdl_definition().operands
    required = [name for name, d in defs if not isinstance(d, (VarOperandDef, OptOperandDef))]
    variadic = any(isinstance(d, VarOperandDef) and not isinstance(d, OptOperandDef)
                   for _, d in defs)
    optional = sum(isinstance(d, OptOperandDef) for _, d in defs)
    if given < len(required) or (not variadic and given > len(required) + optional):
        names = ", ".join(name for name, _ in defs)
        raise TypeError(f"takes operands ({names}), got {given}")


def _defines(module: ModuleOp, name: str) -> bool:
    """Whether ``module`` has a top-level symbol ``name`` (a function)."""
    return any(getattr(op, "sym_name", None) is not None and op.sym_name.data == name
               for op in module.ops)


def _resolve_reshape(src: Sequence[int], shape: Sequence[int]) -> tuple[int, ...]:
    """numpy-style ``-1`` in a builder reshape (the IR itself only holds static dims); a
    located error naming the requested shape when it cannot hold ``src``'s elements."""
    asked, shape = tuple(shape), list(shape)
    size = int(np.prod(src))
    known = int(np.prod([d for d in shape if d != -1]))
    unknown = shape.count(-1)
    if unknown > 1 or any(d < -1 for d in shape) or (
            size != known if not unknown else known == 0 or size % known):
        why = ("only one dim may be -1" if unknown > 1 else
               "dims must be >= 0 or -1" if any(d < -1 for d in shape) else
               f"{size} elements do not fit")
        raise RlxError(f"cannot reshape {list(src)} ({size} elements) to {asked}: {why}",
                       loc=loc_from_attr(_user_location()))
    if unknown:
        shape[shape.index(-1)] = size // known
    return tuple(shape)
