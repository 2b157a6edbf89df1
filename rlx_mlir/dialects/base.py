"""Shared machinery of every rlx op: types, attribute conversion, syntax, verification.

Every rlx op subclasses :class:`RlxOp` and implements one classmethod,
:meth:`RlxOp.infer`, its shape rule: operand types and Python attribute values
in, result types out (or :class:`ShapeError`). The verifier, the builder and the
transforms all use that one rule.

The custom syntax is the same for every op (MLIR's functional-type style)::

    %y = rlx.softmax %x {axis = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    BoolAttr,
    BytesAttr,
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    Float32Type,
    Float64Type,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
    bf16,
    f16,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.irdl import IRDLOperation, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

# ---------------------------------------------------------------- dtypes

DTYPES: dict[str, Attribute] = {
    "f32": f32,
    "f64": f64,
    "i1": i1,
    "i32": i32,
    "i64": i64,
    "c64": ComplexType(f32),
    "c128": ComplexType(f64),
    "f16": f16,
    "bf16": bf16,
    "i8": i8,
}
NUMPY_DTYPES: dict[str, np.dtype] = {
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "c64": np.dtype(np.complex64),
    "c128": np.dtype(np.complex128),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "i8": np.dtype(np.int8),
}
FLOAT_DTYPES = ("f32", "f64")
INT_DTYPES = ("i32", "i64")
COMPLEX_DTYPES = ("c64", "c128")
HALF_DTYPES = ("f16", "bf16")
REAL_FLOAT_DTYPES = FLOAT_DTYPES + HALF_DTYPES
"""Every real float dtype: the compute floats and the half-precision storage ones."""
STORAGE_DTYPES = {"f16": "f32", "bf16": "f32", "i8": "i32"}
"""Storage-only dtypes and the dtype ops compute them in: only ``rlx.cast``, constants,
control-flow carries and the quantization ops take them (the frontend casts around
every other op)."""
COMPLEX_OF = {"f32": "c64", "f64": "c128"}
"""The complex dtype whose parts are the given float dtype (and back: ``REAL_OF``)."""
REAL_OF = {c: f for f, c in COMPLEX_OF.items()}


_STORAGE_TYPES = tuple(DTYPES[d] for d in STORAGE_DTYPES)


class ShapeError(VerifyException):
    """An operand or attribute that the op's shape rule rejects."""


def dtype_name(element_type: Attribute) -> str:
    """The short name (``f32``, ``i64`` ...) of an MLIR element type."""
    for name, t in DTYPES.items():
        if t == element_type:
            return name
    raise ShapeError(f"unsupported element type {element_type}")


def tensor(shape: Sequence[int], dtype: str = "f32") -> TensorType:
    """``tensor((2, 3))`` is ``tensor<2x3xf32>``."""
    if dtype not in DTYPES:
        raise ShapeError(f"unknown dtype '{dtype}' (expected one of {', '.join(DTYPES)})")
    return TensorType(DTYPES[dtype], [int(d) for d in shape])


def shape_of(t: Attribute) -> tuple[int, ...]:
    if not isinstance(t, TensorType):
        raise ShapeError(f"expected a ranked tensor, got {t}")
    shape = tuple(int(d) for d in t.get_shape())
    if any(d < 0 for d in shape):
        raise ShapeError(f"dynamic dimensions are not supported: {t}")
    return shape


def dtype_of(t: Attribute) -> str:
    if not isinstance(t, TensorType):
        raise ShapeError(f"expected a ranked tensor, got {t}")
    return dtype_name(t.element_type)


def numpy_dtype(t: Attribute) -> np.dtype:
    return NUMPY_DTYPES[dtype_of(t)]


def is_real_float(dtype: np.dtype) -> bool:
    """A real float numpy dtype, bf16 included (ml_dtypes gives it numpy kind ``V``)."""
    return dtype.kind == "f" or dtype == NUMPY_DTYPES["bf16"]


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


# ---------------------------------------------------------------- attributes


def to_attr(value: Any) -> Attribute:
    """Python value -> attribute, with DESIGN 4.1's encodings.

    bool -> BoolAttr, int -> i64, float -> f32, str -> string,
    list/tuple -> ``array<i64: ...>``, numpy array -> dense elements.
    """
    if isinstance(value, Attribute):
        return value
    if isinstance(value, (bool, np.bool_)):
        return BoolAttr.from_bool(bool(value))
    if isinstance(value, (int, np.integer)):
        return IntegerAttr(int(value), i64)
    if isinstance(value, (float, np.floating)):
        return FloatAttr(float(value), f32)
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, (list, tuple)):
        return DenseArrayBase.from_list(i64, [int(v) for v in value])
    if isinstance(value, np.ndarray):
        return dense_attr(value)
    raise TypeError(f"cannot encode {value!r} as an rlx attribute")


def dense_attr(array: np.ndarray) -> DenseIntOrFPElementsAttr:
    """A dense elements attribute holding ``array`` (its dtype decides the type)."""
    names = {v: k for k, v in NUMPY_DTYPES.items()}
    dtype = names.get(array.dtype)
    if dtype is None or dtype in COMPLEX_DTYPES:
        raise TypeError(f"constants of dtype {array.dtype} are not supported")
    ttype = tensor(array.shape, dtype)
    # xDSL keeps the elements as little-endian bytes (an i1 true as 0xff): built from the
    # array's bytes, not element by element (a 4096x4096 weight took 14 s that way)
    stored = -array.astype(np.int8) if dtype == "i1" else array
    data = np.ascontiguousarray(stored, stored.dtype.newbyteorder("<")).tobytes()
    return DenseIntOrFPElementsAttr(ttype, BytesAttr(data))


def from_attr(attr: Attribute) -> Any:
    """Attribute -> Python value (inverse of :func:`to_attr`)."""
    if isinstance(attr, IntegerAttr):
        if attr.type == i1:
            return bool(attr.value.data)
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, DenseArrayBase):
        return tuple(int(v) for v in attr.get_values())
    if isinstance(attr, DenseIntOrFPElementsAttr):
        ttype = attr.get_type()
        kind = numpy_dtype(ttype)
        if kind.kind != "c":  # the stored little-endian bytes (i1: 0 or 0xff)
            raw = np.frombuffer(attr.data.data, np.int8 if kind == np.bool_ else
                                kind.newbyteorder("<"))
            values = raw != 0 if kind == np.bool_ else raw.astype(kind)
            return values.reshape(shape_of(ttype))
        values = np.array(list(attr.get_values()))
        if numpy_dtype(ttype).kind == "c":  # stored as (re, im) pairs; keep signed zeros
            pairs = values.reshape(-1, 2)
            values = np.empty(len(pairs), numpy_dtype(ttype))
            values.real, values.imag = pairs[:, 0], pairs[:, 1]
        return values.astype(numpy_dtype(ttype)).reshape(shape_of(ttype))
    return attr


def norm_axis(axis: int, rank: int, what: str = "axis") -> int:
    """Normalise a possibly negative axis; ShapeError when out of range."""
    if not -rank <= axis < max(rank, 1):
        raise ShapeError(f"{what} {axis} is out of range for rank {rank}")
    return axis % rank if rank else 0


def broadcast_shapes(a: Sequence[int], b: Sequence[int]) -> tuple[int, ...]:
    """NumPy broadcasting of two shapes; ShapeError when incompatible."""
    rank = max(len(a), len(b))
    pa = (1,) * (rank - len(a)) + tuple(a)
    pb = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(pa, pb, strict=True):
        if x != y and 1 not in (x, y):
            raise ShapeError(
                f"shapes {fmt_shape(a)} and {fmt_shape(b)} do not broadcast"
            )
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(out)


# ---------------------------------------------------------------- the op base


class RlxOp(IRDLOperation):
    """Base of every rlx op.

    Subclasses declare operands/attributes with xDSL's ``operand_def`` and
    ``attr_def`` and implement :meth:`infer`. ``RESULT_FROM_TYPE`` marks ops
    (reshape, expand, cast) whose result shape is given by the result type.
    """

    traits = traits_def(Pure())
    RESULT_FROM_TYPE: ClassVar[bool] = False
    TAKES_STORAGE: ClassVar[bool] = False
    ACCUMULATES: ClassVar[bool] = False
    """Sums (``reduce_sum``, ``reduce_prod``, ``cumsum``): on i8 data their i32 results
    are kept, as JAX's (every other op's wrap back to i8)."""
    INDEX_RESULTS: ClassVar[bool] = False
    """Its results are indices (i32), never rounded back to a storage dtype (``rlx.top_k``
    of i8 values computes on i32 ones and returns i32 indices, not i8)."""
    """Whether f16/bf16/i8 operands are allowed: they are storage types
    (:meth:`check_storage`)."""
    ATTRS: ClassVar[dict[str, str]] = {}
    """Attribute name -> encoding and meaning (checked by the verifier, used by docs)."""

    # -- the shape rule ----------------------------------------------------
    @classmethod
    def infer(
        cls,
        types: Sequence[TensorType],
        attrs: Mapping[str, Any],
        out: Sequence[TensorType] | None,
    ) -> list[TensorType]:
        """Result types from operand types and attribute values.

        ``out`` is the declared result types (None when building); only the
        ops with ``RESULT_FROM_TYPE`` read it.
        """
        raise NotImplementedError(cls.__name__)

    # -- helpers -------------------------------------------------------------
    def attr(self, name: str, default: Any = None) -> Any:
        """The Python value of attribute ``name`` (``default`` when absent)."""
        value = self.attributes.get(name)
        return default if value is None else from_attr(value)

    def py_attrs(self) -> dict[str, Any]:
        return {k: from_attr(v) for k, v in self.attributes.items()}

    def in_types(self) -> list[TensorType]:
        return [v.type for v in self.operands]  # type: ignore[misc]

    # -- verification --------------------------------------------------------
    @classmethod
    def check_attribute_names(cls, names: Iterable[str]) -> None:
        """ShapeError naming the first of ``names`` the op does not define (a typo such as
        ``axs=0`` must not silently leave the default)."""
        known = getattr(cls, "ATTRS", {})
        for key in names:
            if key not in known:
                allowed = ", ".join(known) or "none"
                raise ShapeError(f"unknown attribute '{key}' (allowed: {allowed})")

    @classmethod
    def check_storage(cls, types: Iterable[Attribute]) -> None:
        """ShapeError when an op that computes sees a storage dtype (f16, bf16, i8: only
        ``rlx.cast``, ``rlx.constant``, the control-flow ops carrying values and the
        quantization ops take them)."""
        if cls.TAKES_STORAGE:
            return
        for t in types:
            if isinstance(t, TensorType) and t.element_type in _STORAGE_TYPES:
                wide = STORAGE_DTYPES[dtype_of(t)]
                raise ShapeError(
                    f"'{cls.name}' does not compute in {dtype_of(t)}, got {t}: f16, bf16 and "
                    f"i8 are storage types; convert them to {wide} with 'rlx.cast' (the "
                    "Python frontend casts around every op)")

    def verify_(self) -> None:
        type(self).check_attribute_names(self.attributes)
        for t in self.in_types():
            shape_of(t)
            dtype_of(t)
        declared = [r.type for r in self.results]
        type(self).check_storage([*self.in_types(), *declared])
        inferred = type(self).infer(self.in_types(), self.py_attrs(), declared)
        if list(inferred) != list(declared):
            want = ", ".join(str(t) for t in inferred)
            got = ", ".join(str(t) for t in declared)
            raise ShapeError(f"result type mismatch: expected {want}, got {got}")

    # -- construction --------------------------------------------------------
    @classmethod
    def make(
        cls,
        operands: Sequence[SSAValue],
        attrs: Mapping[str, Any] | None = None,
        out: Sequence[TensorType] | None = None,
        regions: Sequence[Region] = (),
    ) -> RlxOp:
        """Build the op, inferring result types (``out`` for RESULT_FROM_TYPE ops)."""
        cls.check_attribute_names(k for k, v in (attrs or {}).items() if v is not None)
        attributes = {k: to_attr(v) for k, v in (attrs or {}).items() if v is not None}
        py = {k: from_attr(v) for k, v in attributes.items()}
        types = [v.type for v in operands]
        cls.check_storage([*types, *(out or ())])
        result_types = cls.infer(types, py, out)  # type: ignore[arg-type]
        return cls.create(
            operands=list(operands), result_types=list(result_types), attributes=attributes,
            regions=list(regions),
        )

    # -- syntax --------------------------------------------------------------
    @classmethod
    def parse(cls, parser: Parser) -> RlxOp:
        pos = parser.pos
        unresolved = []
        if parser._current_token.text.startswith("%"):
            unresolved = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_unresolved_operand
            )
        attributes = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ftype = parser.parse_function_type()
        regions = []
        if parser.parse_optional_punctuation("(") is not None:
            regions = parser.parse_comma_separated_list(
                parser.Delimiter.NONE, parser.parse_region
            )
            parser.parse_punctuation(")")
        inputs = list(ftype.inputs.data)
        if len(inputs) != len(unresolved):
            parser.raise_error(
                f"'{cls.name}' has {len(unresolved)} operands but its type lists "
                f"{len(inputs)}",
                pos,
                parser.pos,
            )
        operands = [
            parser.resolve_operand(u, t) for u, t in zip(unresolved, inputs, strict=True)
        ]
        return cls.create(
            operands=operands,
            result_types=list(ftype.outputs.data),
            attributes=attributes,
            regions=regions,
        )

    def print(self, printer: Printer) -> None:
        if self.operands:
            printer.print_string(" ")
            printer.print_list(self.operands, printer.print_operand)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_function_type(
            [v.type for v in self.operands], [r.type for r in self.results]
        )
        if self.regions:
            printer.print_string(" (")
            printer.print_list(self.regions, printer.print_region)
            printer.print_string(")")


def expect_rank(t: TensorType, ranks: Sequence[int], what: str) -> tuple[int, ...]:
    shape = shape_of(t)
    if len(shape) not in ranks:
        want = " or ".join(str(r) for r in ranks)
        raise ShapeError(f"{what} must have rank {want}, got {t}")
    return shape


def expect_float(t: TensorType, what: str) -> str:
    dtype = dtype_of(t)
    if dtype not in FLOAT_DTYPES:
        raise ShapeError(f"{what} must be f32 or f64, got {t}")
    return dtype


def expect_same_dtype(types: Sequence[TensorType], what: str) -> str:
    dtypes = {dtype_of(t) for t in types}
    if len(dtypes) != 1:
        listed = ", ".join(str(t) for t in types)
        raise ShapeError(f"{what} must share one element type, got {listed}")
    return dtypes.pop()


def expect_index(t: TensorType, what: str) -> str:
    """Index/label operands: i32, i64 or float-encoded integers (SPEC 1.4; f64 too, so
    that a module promoted to f64 for gradient checking stays valid)."""
    dtype = dtype_of(t)
    if dtype not in ("i32", "i64", "f32", "f64"):
        raise ShapeError(f"{what} must be i32, i64 or f32-encoded integers, got {t}")
    return dtype


def require(attrs: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    """An attribute that must be present and of a Python kind (int, float, tuple...)."""
    if name not in attrs:
        raise ShapeError(f"missing required attribute '{name}'")
    value = attrs[name]
    if kind is int and isinstance(value, bool):
        raise ShapeError(f"attribute '{name}' must be an i64 integer, got {value}")
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        names = {int: "an i64 integer", float: "an f32 float", bool: "a bool",
                 str: "a string", tuple: "an array<i64: ...>"}
        want = " or ".join(names.get(k, k.__name__) for k in kinds)
        shown = str(value) if isinstance(value, Attribute) else repr(value)
        hint = " (write array<i64: ...>, not [...])" if isinstance(value, ArrayAttr) and \
            tuple in kinds else ""
        raise ShapeError(f"attribute '{name}' must be {want}, got {shown}{hint}")
    return value


def optional(attrs: Mapping[str, Any], name: str, kind: type | tuple[type, ...],
             default: Any) -> Any:
    return require(attrs, name, kind) if name in attrs else default


__all__ = [
    "RlxOp", "ShapeError", "tensor", "shape_of", "dtype_of", "numpy_dtype", "to_attr",
    "from_attr", "norm_axis", "broadcast_shapes", "expect_rank", "expect_float",
    "expect_same_dtype", "expect_index", "require", "optional", "fmt_shape", "dense_attr",
    "FLOAT_DTYPES", "HALF_DTYPES", "REAL_FLOAT_DTYPES", "STORAGE_DTYPES", "INT_DTYPES", "DTYPES", "Float32Type", "Float64Type", "IntegerType",
]


def define_op(class_name: str, base: type[RlxOp], name: str, doc: str, **consts: Any):
    """Define a concrete op class from a parametric base (e.g. one per activation).

    ``consts`` become ClassVar constants of the class (upper-case names).
    """
    from xdsl.irdl import irdl_op_definition

    namespace: dict[str, Any] = {"name": name, "__doc__": doc, "__module__": base.__module__}
    namespace.update(consts)
    namespace["__annotations__"] = {k: ClassVar[Any] for k in consts}
    return irdl_op_definition(type(class_name, (base,), namespace))
