"""The rule-author API: an :class:`Emitter` builds upstream ops before the rlx op it replaces.

A LOWER rule receives the rlx op, an emitter and the operands (tensor SSA values) and
returns the replacement value(s)::

    @LOWER.register(SiluOp)
    def _lower_silu(op, e: Emitter, x):
        return e.elementwise([x], dtype_of(op.result.type),
                             lambda s, v: s.mul(v, s.sigmoid(v)))

Tensor-level helpers (``empty``, ``fill``, ``constant``, ``elementwise``, ``generic``,
``reduce``, ``matmul``, ``batch_matmul``, ``transpose``, ``broadcast_to``, ``reshape``,
``extract_slice``, ``insert_slice``)
and scalar helpers for region bodies (``add``, ``exp``, ``cmp``, ``select``, ``cast`` ...)
live on the same object: inside a body the emitter ``s`` inserts into the body block.
Scalar helpers accept Python numbers for either operand (``s.mul(v, 0.5)``).
"""

from __future__ import annotations

import math as pymath
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import arith, complex, math, tensor
from xdsl.dialects.bufferization import AllocTensorOp
from xdsl.dialects.builtin import (
    AffineMapAttr,
    ArrayAttr,
    BFloat16Type,
    ComplexType,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    TensorType,
    i64,
)
from xdsl.dialects.linalg import attrs as linalg_attrs
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.rewriter import InsertPoint, Rewriter

from rlx_mlir.dialects.base import DTYPES, dense_attr, shape_of
from rlx_mlir.lowering import fastmath
from rlx_mlir.lowering.linalg_ext import BatchMatmulOp

Value = SSAValue
Scalar = SSAValue | float | int | bool
Body = Callable[..., Any]

_CMPF = {"eq": "oeq", "ne": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
_CMPI_SIGNED = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
_CMPI_UNSIGNED = {"eq": "eq", "ne": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}


def element_type(dtype: str | Attribute) -> Attribute:
    """``"f32"`` -> ``f32``; MLIR types pass through."""
    return DTYPES[dtype] if isinstance(dtype, str) else dtype


def is_float(t: Attribute) -> bool:
    return not isinstance(t, IntegerType | ComplexType)


def is_complex(t: Attribute) -> bool:
    return isinstance(t, ComplexType)


def _is_power_of_two(x: object) -> bool:
    """A Python number that is +-2**k (its reciprocal is exact in binary floating point)."""
    if isinstance(x, bool) or not isinstance(x, int | float) or not pymath.isfinite(x) or not x:
        return False
    mantissa, exponent = pymath.frexp(abs(x))
    return mantissa == 0.5 and -126 < exponent < 127


def bit_width(t: Attribute) -> int:
    return t.width.data if isinstance(t, IntegerType) else t.bitwidth  # type: ignore[attr-defined]


def broadcast_map(in_shape: Sequence[int], out_shape: Sequence[int]) -> AffineMap:
    """NumPy broadcasting as an indexing map: leading dims dropped, size-1 dims -> 0.

    >>> str(broadcast_map((4, 1), (3, 4, 8)))
    '(d0, d1, d2) -> (d1, 0)'
    """
    rank, lead = len(out_shape), len(out_shape) - len(in_shape)
    exprs = [
        AffineExpr.constant(0) if d == 1 and out_shape[lead + i] != 1
        else AffineExpr.dimension(lead + i)
        for i, d in enumerate(in_shape)
    ]
    return AffineMap(rank, 0, tuple(exprs))


def _maps(maps: Sequence[AffineMap]) -> ArrayAttr:
    return ArrayAttr([AffineMapAttr(m) for m in maps])


def _iterators(kinds: Sequence[str]) -> ArrayAttr:
    table = {"parallel": linalg_attrs.IteratorTypeAttr.parallel(),
             "reduction": linalg_attrs.IteratorTypeAttr.reduction()}
    return ArrayAttr([table[k] for k in kinds])


def _reassociation(groups: Sequence[Sequence[int]]) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])


class Emitter:
    """Inserts upstream ops at one insertion point and returns their results."""

    def __init__(self, insert_point: InsertPoint, shared: dict[Any, Any] | None = None):
        self.insert_point = insert_point
        self.shared = {} if shared is None else shared

    def once(self, key: Any, build: Callable[[], Any]) -> Any:
        """``build()`` the first time ``key`` is asked for in this block, the same values
        after (e.g. attention's probabilities, needed by the forward op and by each of its
        gradient ops). Values are emitted before the first asker; later askers in the same
        block come after it, so the values dominate them. ``key`` holds SSA values and
        attributes (the operands and configuration the values depend on)."""
        full = (self.insert_point.block, key)
        if full not in self.shared:
            self.shared[full] = build()
        return self.shared[full]

    # -- raw insertion ------------------------------------------------------
    def emit(self, op: Operation) -> Any:
        """Insert ``op``; return its single result (or the op when it has several)."""
        Rewriter.insert_op(op, self.insert_point)
        return op.results[0] if len(op.results) == 1 else op

    def region(self, arg_types: Sequence[Attribute], body: Body, yield_op=linalg.YieldOp) -> Region:
        """A one-block region: ``body(emitter, *block_args)`` returns the yielded value(s)."""
        block = Block(arg_types=list(arg_types))
        values = body(Emitter(InsertPoint.at_end(block)), *block.args)
        values = values if isinstance(values, (list, tuple)) else [values]
        block.add_op(yield_op(*values))
        return Region(block)

    # -- tensors ------------------------------------------------------------
    def empty(self, shape: Sequence[int], dtype: str | Attribute) -> Value:
        return self.emit(tensor.EmptyOp([], TensorType(element_type(dtype), list(shape))))

    def fill(self, value: Scalar, shape: Sequence[int], dtype: str | Attribute) -> Value:
        """A tensor of ``shape`` holding ``value`` everywhere (``linalg.fill``)."""
        return self._filled(self.empty(shape, dtype), value)

    def fresh(self, shape: Sequence[int], dtype: str | Attribute,
              value: Scalar | None = None) -> Value:
        """A new tensor (``bufferization.alloc_tensor``, holding ``value`` if given) that
        CSE never merges with another. Two loops carrying one CSE-merged ``tensor.empty``
        or fill are a read-after-write conflict One-Shot Bufferize cannot resolve (a scan
        of length 1, once canonicalize drops its loops, or a routing at one token)."""
        init = self.emit(AllocTensorOp(TensorType(element_type(dtype), list(shape))))
        return init if value is None else self._filled(init, value)

    def _filled(self, init: Value, value: Scalar) -> Value:
        shape = init.type.get_shape()  # type: ignore[attr-defined]
        etype = init.type.element_type  # type: ignore[attr-defined]
        if is_complex(etype):  # linalg.fill takes real scalars only: a generic
            return self.generic([], [init], [AffineMap.identity(len(shape))],
                                ["parallel"] * len(shape), lambda s, _: s.scalar(value, etype))
        scalar = self.scalar(value, etype)
        return self.emit(linalg.FillOp([scalar], [init], [init.type]))

    def constant(self, value: np.ndarray | DenseIntOrFPElementsAttr) -> Value:
        """``arith.constant dense<...>`` from a numpy array or a dense attribute."""
        attr = value if isinstance(value, DenseIntOrFPElementsAttr) else dense_attr(value)
        return self.emit(arith.ConstantOp(attr))

    def generic(self, inputs: Sequence[Value], inits: Sequence[Value],
                maps: Sequence[AffineMap], iterators: Sequence[str], body: Body) -> Any:
        """``linalg.generic``; ``body(s, *in_scalars, *out_scalars)`` returns the yields."""
        types = [v.type.element_type for v in (*inputs, *inits)]  # type: ignore[attr-defined]
        op = linalg.GenericOp(
            list(inputs), list(inits), self.region(types, body), _maps(maps),
            _iterators(iterators), [v.type for v in inits],
        )
        return self.emit(op)

    def elementwise(self, inputs: Sequence[Value], dtype: str | Attribute, body: Body,
                    shape: Sequence[int] | None = None) -> Value:
        """A parallel ``linalg.generic`` over NumPy-broadcast ``inputs``.

        ``body(s, *scalars)`` returns the result scalar of element type ``dtype``.
        """
        out_shape = tuple(shape) if shape is not None else _broadcast_all(inputs)
        init = self.empty(out_shape, dtype)
        maps = [broadcast_map(shape_of(v.type), out_shape) for v in inputs]
        maps.append(AffineMap.identity(len(out_shape)))
        return self.generic(
            inputs, [init], maps, ["parallel"] * len(out_shape),
            lambda s, *args: body(s, *args[: len(inputs)]),
        )

    def broadcast_to(self, x: Value, shape: Sequence[int]) -> Value:
        """NumPy ``broadcast_to`` materialised as a copy."""
        return self.elementwise([x], x.type.element_type, lambda s, v: v, shape)  # type: ignore[attr-defined]

    def reduce(self, x: Value, axes: Sequence[int], init: Scalar, body: Body,
               keep_dims: bool = False, acc_type: str | Attribute | None = None) -> Value:
        """``linalg.reduce`` over ``axes`` from ``init``; ``body(s, elem, acc)`` -> new acc.
        The accumulator (and result) has ``acc_type`` (default: ``x``'s element type)."""
        in_shape, etype = shape_of(x.type), x.type.element_type  # type: ignore[attr-defined]
        acc_etype = etype if acc_type is None else element_type(acc_type)
        axes = sorted(a % len(in_shape) for a in axes)
        kept = [d for i, d in enumerate(in_shape) if i not in axes]
        acc = self.fill(init, kept, acc_etype)
        region = self.region([etype, acc_etype], body)
        out = self.emit(linalg.ReduceOp(x, acc, DenseArrayBase.from_list(i64, axes), region))
        if not keep_dims:
            return out
        return self.reshape(out, [1 if i in axes else d for i, d in enumerate(in_shape)])

    def matmul(self, a: Value, b: Value) -> Value:
        """``linalg.matmul`` of [M, K] x [K, N] into a zero-filled [M, N]."""
        (m, _), (_, n) = shape_of(a.type), shape_of(b.type)
        acc = self.fill(0, (m, n), a.type.element_type)  # type: ignore[attr-defined]
        return self.emit(linalg.MatmulOp([a, b], [acc]))

    def batch_matmul(self, a: Value, b: Value) -> Value:
        """``linalg.batch_matmul`` of [B, M, K] x [B, K, N] into a zero-filled [B, M, N]."""
        (bs, m, _), (_, _, n) = shape_of(a.type), shape_of(b.type)
        acc = self.fill(0, (bs, m, n), a.type.element_type)  # type: ignore[attr-defined]
        return self.emit(BatchMatmulOp([a, b], [acc]))

    def transpose(self, x: Value, perm: Sequence[int]) -> Value:
        """``linalg.transpose``: result dim ``i`` is operand dim ``perm[i]``."""
        in_shape = shape_of(x.type)
        init = self.empty([in_shape[p] for p in perm], x.type.element_type)  # type: ignore[attr-defined]
        if is_complex(x.type.element_type):  # type: ignore[attr-defined]
            # xDSL's named linalg ops take real elements only: the same loop as a generic
            # (output dim i reads input dim perm[i])
            inverse = [perm.index(d) for d in range(len(perm))]
            read = AffineMap(len(perm), 0, tuple(AffineExpr.dimension(i) for i in inverse))
            return self.generic([x], [init], [read, AffineMap.identity(len(perm))],
                                ["parallel"] * len(perm), lambda s, v, _: v)
        return self.emit(linalg.TransposeOp(x, init, DenseArrayBase.from_list(i64, list(perm))))

    def reshape(self, x: Value, shape: Sequence[int]) -> Value:
        """Row-major reshape via ``tensor.collapse_shape`` then ``tensor.expand_shape``."""
        in_shape, etype = shape_of(x.type), x.type.element_type  # type: ignore[attr-defined]
        if tuple(in_shape) == tuple(shape):
            return x
        size = int(np.prod(in_shape))
        if size == 1 and not (in_shape and shape):
            return self._single_element(x, shape, etype)
        if len(in_shape) == 1:
            flat = x
        elif in_shape:
            flat = self._collapse(x, in_shape, [size], etype)
        else:
            flat = self._expand(x, in_shape, [size], etype)
        if len(shape) == 1:
            return flat
        if shape:
            return self._expand(flat, [size], shape, etype)
        return self._collapse(flat, [size], shape, etype)

    def extract_slice(self, x: Value, offsets: Sequence[int], sizes: Sequence[int],
                      strides: Sequence[int] | None = None) -> Value:
        """``x[o0:o0+s0*st0:st0, ...]`` as ``tensor.extract_slice`` (same rank)."""
        op = tensor.ExtractSliceOp.from_static_parameters(x, list(offsets), list(sizes),
                                                         None if strides is None else list(strides))
        return self.emit(op)

    def insert_slice(self, x: Value, into: Value, offsets: Sequence[int],
                     strides: Sequence[int] | None = None) -> Value:
        """``into`` with ``x`` written at ``offsets`` (``tensor.insert_slice``)."""
        sizes = list(shape_of(x.type))
        op = tensor.InsertSliceOp.from_static_parameters(x, into, list(offsets), sizes,
                                                        None if strides is None else list(strides))
        return self.emit(op)

    def _single_element(self, x: Value, shape: Sequence[int], etype) -> Value:
        """A one-element reshape to or from rank 0: its element extracted and rebuilt
        (``tensor.extract`` + ``tensor.from_elements``; a 0-d expand/collapse has an empty
        reassociation, which xDSL's verifier rejects although MLIR accepts it)."""
        zeros = [self.emit(arith.ConstantOp(IntegerAttr(0, IndexType())))
                 for _ in shape_of(x.type)]
        element = self.emit(tensor.ExtractOp(x, zeros, etype))
        return self.emit(tensor.FromElementsOp(element,
                                               result_type=TensorType(etype, list(shape))))

    def _collapse(self, x: Value, in_shape, out_shape, etype) -> Value:
        groups = [list(range(len(in_shape)))] if out_shape and in_shape else []
        op = tensor.CollapseShapeOp.create(
            operands=[x], result_types=[TensorType(etype, list(out_shape))],
            properties={"reassociation": _reassociation(groups)})
        return self.emit(op)

    def _expand(self, x: Value, in_shape, out_shape, etype) -> Value:
        groups = [list(range(len(out_shape)))] if in_shape and out_shape else []
        op = tensor.ExpandShapeOp.create(
            operands=[x], result_types=[TensorType(etype, list(out_shape))],
            properties={"reassociation": _reassociation(groups),
                        "static_output_shape": DenseArrayBase.from_list(i64, list(out_shape))})
        return self.emit(op)

    # -- scalars (region bodies, or anywhere) ---------------------------------
    def scalar(self, value: Scalar, etype: Attribute) -> Value:
        """A scalar SSA value: Python numbers become ``arith.constant`` of ``etype``."""
        if isinstance(value, SSAValue):
            return value
        if is_complex(etype):
            parts = (float(value.real), float(value.imag))  # type: ignore[union-attr]
            return self.emit(complex.ConstantOp.from_floats(parts, etype.element_type))
        if is_float(etype):
            return self.emit(arith.ConstantOp(FloatAttr(float(value), etype)))  # type: ignore[arg-type]
        return self.emit(arith.ConstantOp(IntegerAttr(int(value), etype)))  # type: ignore[arg-type]

    def is_float(self, x: Value) -> bool:
        """Whether a scalar value is floating point (pick float or integer semantics)."""
        return is_float(x.type)

    def is_integer(self, x: Value) -> bool:
        """Whether a scalar value is an integer (or i1), not a real or complex float."""
        return isinstance(x.type, IntegerType)

    def _pair(self, a: Scalar, b: Scalar) -> tuple[Value, Value]:
        like = a.type if isinstance(a, SSAValue) else b.type  # type: ignore[union-attr]
        return self.scalar(a, like), self.scalar(b, like)

    def _binary(self, a: Scalar, b: Scalar, float_op, int_op, complex_op=None) -> Value:
        a, b = self._pair(a, b)
        if is_complex(a.type):
            if complex_op is None:
                raise TypeError(f"no complex form of {float_op.name}")
            built = complex_op(a, b)
            return built if isinstance(built, SSAValue) else self.emit(built)
        return self.emit((float_op if is_float(a.type) else int_op)(a, b))

    def add(self, a: Scalar, b: Scalar) -> Value:
        return self._binary(a, b, arith.AddfOp, arith.AddiOp, complex.AddOp)

    def sub(self, a: Scalar, b: Scalar) -> Value:
        return self._binary(a, b, arith.SubfOp, arith.SubiOp, complex.SubOp)

    def mul(self, a: Scalar, b: Scalar) -> Value:
        return self._binary(a, b, arith.MulfOp, arith.MuliOp, self._complex_mul)

    def _complex_mul(self, a: Value, b: Value) -> Value:
        """numpy's product ``(ac - bd) + (ad + bc)i`` (``complex.mul`` lowers to C99 Annex
        G's inf/NaN recovery: 14x slower)."""
        (ar, ai), (br, bi) = self._parts(a), self._parts(b)
        return self.make_complex(self.sub(self.mul(ar, br), self.mul(ai, bi)),
                                 self.add(self.mul(ar, bi), self.mul(ai, br)))

    def _complex_div(self, a: Value, b: Value) -> Value:
        """numpy's quotient: Smith's algorithm on the larger part of ``b``; a zero ``b``
        divides the parts by 0 (inf or NaN, as numpy)."""
        (ar, ai), (br, bi) = self._parts(a), self._parts(b)
        real_larger = self.cmp("ge", self.abs(br), self.abs(bi))
        # real part larger: t = bi / br; else t = br / bi (both built; select picks)
        t1 = self.div(bi, br)
        s1 = self.div(1.0, self.add(br, self.mul(bi, t1)))
        q1 = (self.mul(self.add(ar, self.mul(ai, t1)), s1),
              self.mul(self.sub(ai, self.mul(ar, t1)), s1))
        t2 = self.div(br, bi)
        s2 = self.div(1.0, self.add(bi, self.mul(br, t2)))
        q2 = (self.mul(self.add(self.mul(ar, t2), ai), s2),
              self.mul(self.sub(self.mul(ai, t2), ar), s2))
        zero = self.cmp("eq", self.abs(br), 0.0)
        zero = self.emit(arith.AndIOp(zero, self.cmp("eq", self.abs(bi), 0.0)))
        q0 = (self.div(ar, self.abs(br)), self.div(ai, self.abs(br)))
        pick = [self.select(real_larger, self.select(zero, z, x), y)
                for z, x, y in zip(q0, q1, q2, strict=True)]
        return self.make_complex(*pick)

    def _parts(self, z: Value) -> tuple[Value, Value]:
        return self.real(z), self.imag(z)

    def div(self, a: Scalar, b: Scalar) -> Value:
        """Float division, or signed integer division truncating toward zero. A float
        divided by a power-of-two constant (a mean over 256 rows) is multiplied by its
        reciprocal instead: the same exactly rounded result, ~10x cheaper in vector code."""
        if isinstance(a, SSAValue) and is_float(a.type) and _is_power_of_two(b):
            return self.mul(a, 1.0 / b)  # type: ignore[operator]
        return self._binary(a, b, arith.DivfOp, arith.DivSIOp, self._complex_div)

    def min(self, a: Scalar, b: Scalar) -> Value:
        """NaN-propagating minimum (``np.minimum``)."""
        return self._binary(a, b, arith.MinimumfOp, arith.MinSIOp)

    def max(self, a: Scalar, b: Scalar) -> Value:
        return self._binary(a, b, arith.MaximumfOp, arith.MaxSIOp)

    def pow(self, a: Scalar, b: Scalar) -> Value:
        """``a ** b``: ``math.powf`` for floats, ``math.ipowi`` for integers."""
        return self._binary(a, b, math.PowFOp, math.IPowIOp)

    def copysign(self, a: Scalar, b: Scalar) -> Value:
        a, b = self._pair(a, b)
        return self.emit(math.CopySignOp(a, b))

    def neg(self, x: Value) -> Value:
        if is_complex(x.type):
            return self.emit(complex.NegOp(x))
        return self.emit(arith.NegfOp(x)) if is_float(x.type) else self.sub(0, x)

    def abs(self, x: Value) -> Value:
        return self.emit(math.AbsFOp(x) if is_float(x.type) else math.AbsIOp(x))

    def exp(self, x: Value) -> Value:
        """f32: a vectorizable polynomial (:mod:`rlx_mlir.lowering.fastmath`); else ``math.exp``."""
        if is_complex(x.type):
            return self.emit(complex.ExpOp(x))
        return fastmath.exp_f32(self, x) if fastmath.is_f32(x) else self.emit(math.ExpOp(x))

    def log(self, x: Value) -> Value:
        """Natural log: f32 a vectorizable polynomial (:mod:`rlx_mlir.lowering.fastmath`);
        complex the principal branch ``ln|z| + i atan2(im, re)``, ``ln|z|`` from the
        scaled modulus (no overflow for parts near the float maximum)."""
        if is_complex(x.type):
            angle = self.emit(math.Atan2Op(self.imag(x), self.real(x)))
            return self.make_complex(self._log_modulus(x), angle)
        if fastmath.is_f32(x):
            return fastmath.log_f32(self, x)
        return self.emit(math.LogOp(x))

    def log1p(self, x: Value) -> Value:
        """``log(1 + x)`` to full precision (Goldberg): ``x`` where ``u = 1 + x`` rounds to
        1, else ``log(u) x / (u - 1)`` (``math.log1p`` lowers as ``log(1 + x)``)."""
        u = self.add(x, 1.0)
        exact = self.div(self.mul(self.log(u), x), self.sub(u, 1.0))
        return self.select(self.cmp("eq", u, 1.0), x, exact)

    def _log_modulus(self, z: Value) -> Value:
        """``ln|z|``. Near the unit circle (the larger part in [0.5, 2]) ``log1p((a - 1)(a
        + 1) + b^2) / 2`` in f64 (exact products of f32 parts), else ``ln a + log1p((b /
        a)^2) / 2`` (no overflow): ``ln|1 + 1e-4 i|`` was 0, as ``ln`` of the rounded
        modulus, where numpy gives 5e-9."""
        big, ratio = self._scaled_parts(z)
        part = big.type
        far = self.add(self.log(big), self.mul(self.log1p(self.mul(ratio, ratio)), 0.5))
        re, im = self.abs(self.real(z)), self.abs(self.imag(z))
        a, b = (self.cast(v, DTYPES["f64"]) for v in (big, self.min(re, im)))
        unit = self.add(self.mul(self.sub(a, 1.0), self.add(a, 1.0)), self.mul(b, b))
        near = self.cast(self.mul(self.log1p(unit), 0.5), part)
        circle = self.emit(arith.AndIOp(self.cmp("ge", big, 0.5), self.cmp("le", big, 2.0)))
        return self.select(circle, near, far)

    def sqrt(self, x: Value) -> Value:
        """Square root; complex: the principal branch (see :meth:`_complex_sqrt`)."""
        return self._complex_sqrt(x) if is_complex(x.type) else self.emit(math.SqrtOp(x))

    def _scaled_parts(self, z: Value) -> tuple[Value, Value]:
        """``(a, b / a)`` with ``a = max(|re|, |im|)``, ``b`` the other (``b / a = 0`` at 0):
        ``|z| = a sqrt(1 + (b / a)^2)`` without overflow or underflow."""
        re, im = self.abs(self.real(z)), self.abs(self.imag(z))
        big, small = self.max(re, im), self.min(re, im)
        return big, self.select(self.cmp("eq", big, 0.0), 0.0, self.div(small, big))

    def _complex_sqrt(self, z: Value) -> Value:
        """The principal square root as numpy computes it: ``t = sqrt((|re| + |z|) / 2)``,
        then ``(t, im / 2t)`` for ``re >= 0`` and ``(|im| / 2t, t with im's sign)`` below
        (exact on the negative axis: ``sqrt(-4 + 0j) = 2j``, ``sqrt(-4 - 0j) = -2j``)."""
        re, im = self.real(z), self.imag(z)
        big, ratio = self._scaled_parts(z)  # t = sqrt(big) sqrt((|re| / big + |z| / big) / 2)
        share = self.select(self.cmp("eq", big, 0.0), 0.0, self.div(self.abs(re), big))
        norm = self.sqrt(self.add(self.mul(ratio, ratio), 1.0))
        t = self.mul(self.sqrt(big), self.sqrt(self.mul(self.add(share, norm), 0.5)))
        t = self.select(self.cmp("eq", big, float("inf")), big, t)
        half = self.select(self.cmp("eq", t, 0.0), im, self.div(im, self.add(t, t)))
        positive = self.cmp("ge", re, 0.0)
        real = self.select(positive, t, self.abs(half))
        imag = self.select(positive, half, self.copysign(t, im))
        infinite_im = self.cmp("eq", self.abs(im), float("inf"))
        return self.make_complex(self.select(infinite_im, self.abs(im), real),
                                 self.select(infinite_im, im, imag))

    # -- integer bits ------------------------------------------------------------
    def index(self, dim: int, dtype: str | Attribute = "i64") -> Value:
        """``linalg.index dim`` (inside a generic body) as an integer of ``dtype``."""
        return self.emit(arith.IndexCastOp(self.emit(linalg.IndexOp(dim)), element_type(dtype)))

    def xor(self, a: Scalar, b: Scalar) -> Value:
        a, b = self._pair(a, b)
        return self.emit(arith.XOrIOp(a, b))

    def shift_right(self, a: Scalar, b: Scalar) -> Value:
        """Logical (unsigned) right shift."""
        a, b = self._pair(a, b)
        return self.emit(arith.ShRUIOp(a, b))

    def unsigned_to_float(self, x: Value, dtype: str | Attribute) -> Value:
        """An integer read as unsigned, converted to the float ``dtype``."""
        return self.emit(arith.UIToFPOp(x, element_type(dtype)))  # type: ignore[arg-type]

    # -- complex scalars --------------------------------------------------------
    def conj(self, z: Value) -> Value:
        """``re - i im``."""
        return self.emit(complex.ConjOp(z))

    def real(self, z: Value) -> Value:
        return self.emit(complex.ReOp(z))

    def imag(self, z: Value) -> Value:
        return self.emit(complex.ImOp(z))

    def make_complex(self, re: Scalar, im: Scalar) -> Value:
        """``re + i im`` from two floats of the same type."""
        re, im = self._pair(re, im)
        return self.emit(complex.CreateOp(re, im, ComplexType(re.type)))

    def rsqrt(self, x: Value) -> Value:
        return self.emit(math.RsqrtOp(x))

    def tanh(self, x: Value) -> Value:
        """f32: a vectorizable rational approximation; else ``math.tanh``."""
        return fastmath.tanh_f32(self, x) if fastmath.is_f32(x) else self.emit(math.TanhOp(x))

    def erf(self, x: Value) -> Value:
        """f32: a vectorizable rational approximation; else ``math.erf``."""
        return fastmath.erf_f32(self, x) if fastmath.is_f32(x) else self.emit(math.ErfOp(x))

    def sin(self, x: Value) -> Value:
        return self.emit(math.SinOp(x))

    def cos(self, x: Value) -> Value:
        return self.emit(math.CosOp(x))

    def tan(self, x: Value) -> Value:
        return self.emit(math.TanOp(x))

    def atan(self, x: Value) -> Value:
        return self.emit(math.AtanOp(x))

    def floor(self, x: Value) -> Value:
        return self.emit(math.FloorOp(x))

    def sigmoid(self, x: Value) -> Value:
        """``1 / (1 + e)`` for x >= 0 and ``e / (1 + e)`` below, ``e = exp(-|x|)`` (the
        interpreter's formula): no overflow, and full relative precision in the negative
        tail, where ``0.5 * (1 + tanh(x / 2))`` cancels to 0 (f32 sigmoid(-17) = 4.1e-8)."""
        e = self.exp(self.neg(self.abs(x)))
        return self.div(self.select(self.cmp("ge", x, 0.0), 1.0, e), self.add(e, 1.0))

    def round_half_away(self, x: Value) -> Value:
        """Half away from zero, exactly: ``t = trunc(x)``, plus ``copysign(1, x)`` where
        ``|x - t| >= 0.5`` (``x - t`` is exact). ``math.round`` has no x86 instruction, so
        LLVM called libm's ``roundf`` per lane (``floor`` and ``//`` are built on round:
        an int4 decode of 16M weights took 40 ms); trunc is one ``vrndscaleps``. NaN and
        infinities pass through (their ``x - t`` is NaN), and ``floor(|x| + 0.5)`` would
        round 0.49999997 up."""
        t = self.emit(math.TruncOp(x))
        away = self.cmp("ge", self.abs(self.sub(x, t)), 0.5)
        return self.select(away, self.add(t, self.copysign(1.0, x)), t)

    def cmp(self, predicate: str, a: Scalar, b: Scalar) -> Value:
        """``eq ne lt le gt ge`` -> i1 (floats ordered except ``ne``; i1 unsigned)."""
        a, b = self._pair(a, b)
        if is_complex(a.type):  # eq / ne only (the verifier rejects orderings)
            return self.emit((complex.EqualOp if predicate == "eq" else complex.NotEqualOp)(a, b))
        if is_float(a.type):
            return self.emit(arith.CmpfOp(a, b, _CMPF[predicate]))
        table = _CMPI_UNSIGNED if bit_width(a.type) == 1 else _CMPI_SIGNED
        return self.emit(arith.CmpiOp(a, b, table[predicate]))

    def select(self, cond: Value, a: Scalar, b: Scalar) -> Value:
        a, b = self._pair(a, b)
        return self.emit(arith.SelectOp(cond, a, b))

    def truth(self, x: Value) -> Value:
        """``x != 0`` as i1 (i1 passes through)."""
        if not is_float(x.type) and bit_width(x.type) == 1:
            return x
        return self.cmp("ne", x, 0)

    def cast(self, x: Value, dtype: str | Attribute) -> Value:
        """Convert with the interpreter's semantics (float -> int rounds half away from 0)."""
        src, dst = x.type, element_type(dtype)
        if src == dst:
            return x
        if bit_width(dst) == 1 and not is_float(dst):
            return self.truth(x)
        if is_float(src) and is_float(dst):
            return self._float_resize(x, dst)
        if is_float(src) and bit_width(dst) < 32:  # to i8 through i32, wrapping
            return self._int_resize(self.cast(x, "i32"), dst)
        if is_float(src):
            return self.emit(arith.FPToSIOp(self.round_half_away(x), dst))  # type: ignore[arg-type]
        if is_float(dst):
            to_float = arith.UIToFPOp if bit_width(src) == 1 else arith.SIToFPOp
            return self.emit(to_float(x, dst))  # type: ignore[arg-type]
        return self._int_resize(x, dst)

    def _float_resize(self, x: Value, dst: Attribute) -> Value:
        """Float to float; f16 <-> bf16 (same width) goes through f32, which is exact."""
        src = x.type
        if bit_width(dst) == bit_width(src):
            return self._float_resize(self._float_resize(x, DTYPES["f32"]), dst)
        if bit_width(dst) > bit_width(src):
            return self.emit(arith.ExtFOp(x, dst))
        if isinstance(dst, BFloat16Type) and fastmath.is_f32(x):
            return fastmath.f32_to_bf16(self, x)
        return self.emit(arith.TruncFOp(x, dst))

    def _int_resize(self, x: Value, dst: Attribute) -> Value:
        src_bits, dst_bits = bit_width(x.type), bit_width(dst)
        if dst_bits < src_bits:
            return self.emit(arith.TruncIOp(x, dst))
        extend = arith.ExtUIOp if src_bits == 1 else arith.ExtSIOp
        return self.emit(extend(x, dst))


def _broadcast_all(values: Sequence[Value]) -> tuple[int, ...]:
    from rlx_mlir.dialects.base import broadcast_shapes

    shape: tuple[int, ...] = ()
    for v in values:
        shape = broadcast_shapes(shape, shape_of(v.type))
    return shape
