"""Random family: counter-based uniform and normal samples from an integer key (SPEC 2.2.11).

The key is an i64 (or i32) tensor operand rather than an attribute, so one compiled
program draws new numbers each step when the caller passes a new key (SPEC defect 24:
RLX's Sample re-seeded with the same constant on every execution). It is usually 0-d; a
key of shape ``K`` draws a sample of shape ``S`` per key into a result of shape ``K + S``
(how vmap batches keys)::

    %u = rlx.rng_uniform %key : (tensor<i64>) -> tensor<4x8xf32>
    %n = rlx.rng_normal %keys : (tensor<3xi32>) -> tensor<3x16xf64>

Element ``i`` (row-major within its sample) is a pure function of ``(key, i)``: two 32-bit words
``word(key, 2i)`` and ``word(key, 2i + 1)`` of a hash (:func:`mix`, Wellons' lowbias32)
seeded by both halves of the key (:func:`key_seeds`: distinct 64-bit keys never share a
stream), so native code and the interpreter draw bit-identical words, and any tiling or
thread split of the loop draws the same numbers. A sample has fewer than 2^31 elements
(the counters are 32-bit). Uniform f32 takes 24 bits (``[0, 1)``), uniform
f64 53 bits; normal is Box-Muller on two 24-bit uniforms. Neither op has a gradient.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType, f32, i32
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import operand_def, result_def

from rlx_mlir.dialects.base import (
    FLOAT_DTYPES,
    RlxOp,
    ShapeError,
    define_op,
    dtype_of,
    numpy_dtype,
    shape_of,
)
from rlx_mlir.rules import INTERPRET, JVP, LOWER, VJP, VMAP, no_gradient

GOLDEN = 0x9E3779B9
_MIX = ((16, 0x7FEB352D), (15, 0x846CA68B), (16, None))
"""lowbias32: ``x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b; x ^= x >> 16``."""


def mix(x: np.ndarray) -> np.ndarray:
    """The 32-bit hash of uint32 ``x`` (wrapping arithmetic), in place when ``x`` is a
    writable array (a 1e7-element draw made a temporary per step)."""
    x = np.array(x, np.uint32, copy=not (isinstance(x, np.ndarray) and x.flags.writeable))
    shifted = np.empty_like(x)
    for shift, factor in _MIX:
        np.right_shift(x, np.uint32(shift), out=shifted)
        np.bitwise_xor(x, shifted, out=x)
        if factor is not None:
            np.multiply(x, np.uint32(factor), out=x)
    return x


def key_seeds(key: int) -> tuple[np.uint32, np.uint32]:
    """The two 32-bit seeds of a (64-bit) key: ``s1 = mix(lo + GOLDEN)`` of its low word
    and ``s2 = s1 ^ mix(hi)`` of the bits past ``lo``'s sign extension. ``mix`` is a
    bijection with ``mix(0) = 0``, so distinct keys have distinct seed pairs and an i32
    key has ``s2 = s1``."""
    lo = key & 0xFFFFFFFF
    hi = ((key - (lo - (1 << 32) if lo >> 31 else lo)) >> 32) & 0xFFFFFFFF
    with np.errstate(over="ignore"):
        s1 = mix(np.array([lo], np.uint32) + np.uint32(GOLDEN))
        return s1[0], (s1 ^ mix(np.array([hi], np.uint32)))[0]


MAX_SAMPLE = 2**31 - 1
"""Elements of one sample at most: a 32-bit counter numbers the words (two per element)."""


def words(key: int, counters: np.ndarray) -> np.ndarray:
    """``mix(mix(c + s1) ^ s2)`` for each counter ``c`` (:func:`key_seeds`)."""
    s1, s2 = key_seeds(key)
    with np.errstate(over="ignore"):
        x = mix(np.add(counters.astype(np.uint32), s1, dtype=np.uint32))
        return mix(np.bitwise_xor(x, s2, out=x))


class RngOp(RlxOp):
    """Samples of the result type (f32 or f64, static shape ``K + S``) from i64 or i32 keys
    of shape ``K`` (usually 0-d): one sample of shape ``S`` (under 2^31 elements) per key."""

    key = operand_def(TensorType)
    result = result_def(TensorType)
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = {}
    SAMPLE: ClassVar[Callable[[np.ndarray, np.ndarray, np.dtype], np.ndarray]]
    LOWER_SAMPLE: ClassVar[Callable[..., Any]]

    @classmethod
    def infer(cls, types, attrs, out):
        if out is None:
            raise ShapeError(f"'{cls.name}' needs its result type")
        if dtype_of(types[0]) not in ("i32", "i64"):
            raise ShapeError(f"'{cls.name}' key must be an i64 or i32 tensor, got {types[0]}")
        if dtype_of(out[0]) not in FLOAT_DTYPES:
            raise ShapeError(f"'{cls.name}' result must be f32 or f64, got {out[0]}")
        keys = shape_of(types[0])
        if shape_of(out[0])[:len(keys)] != keys:
            raise ShapeError(f"'{cls.name}' result shape {list(shape_of(out[0]))} must start "
                             f"with the key shape {list(keys)}")
        check_sample_size(shape_of(out[0])[len(keys):], ShapeError)
        return [out[0]]


def check_sample_size(sample: Sequence[int], error: Callable[[str], Exception]) -> None:
    """An ``error`` for a sample of :data:`MAX_SAMPLE` + 1 elements or more (its numbers
    would repeat after 2^31 elements)."""
    count = int(np.prod(sample, dtype=object))
    if count > MAX_SAMPLE:
        raise error(f"a random sample of {count} elements per key: at most 2^31 - 1 (the "
                    "numbers would repeat past that); draw it in parts with keys from "
                    "rlx.random.split")


# ---------------------------------------------------------------- the samplers (numpy)

_2_POW = {24: 2.0**-24, 53: 2.0**-53}


def _uniform(w0: np.ndarray, w1: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype == np.float32:
        return ((w0 >> np.uint32(8)).astype(np.float32) * np.float32(_2_POW[24]))
    hi, lo = (w0 >> np.uint32(5)).astype(np.float64), (w1 >> np.uint32(6)).astype(np.float64)
    return (hi * 2.0**26 + lo) * _2_POW[53]


def _normal(w0: np.ndarray, w1: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Box-Muller: ``sqrt(-2 ln u1) cos(2 pi u2)``, the cosine of the exact angle."""
    u1 = ((w0 >> np.uint32(8)).astype(dtype) + 1) * dtype.type(_2_POW[24])  # (0, 1]
    u2 = (w1 >> np.uint32(8)).astype(np.float64) * _2_POW[24]
    return (np.sqrt(-2 * np.log(u1)) * np.cos(2 * math.pi * u2).astype(dtype)).astype(dtype)


# ---------------------------------------------------------------- the samplers (native)


def _lower_words(s: Any, key: Any, shape: tuple[int, ...], n_keys: int) -> tuple[Any, Any]:
    """The two hash words of this element (i32 scalars), as :func:`words`: its flat index
    within its sample (the dims after the ``n_keys`` key dims)."""
    flat = s.scalar(0, i32)
    sample_strides = _strides(shape[n_keys:])
    for dim in range(n_keys, len(shape)):
        if shape[dim] > 1:
            flat = s.add(s.mul(s.cast(s.index(dim), "i32"), sample_strides[dim - n_keys]), flat)
    counter = s.mul(flat, 2)
    s1, s2 = _lower_seeds(s, key)
    return tuple(_lower_mix(s, s.xor(_lower_mix(s, s.add(c, s1)), s2))
                 for c in (counter, s.add(counter, 1)))  # type: ignore[return-value]


def _lower_seeds(s: Any, key: Any) -> tuple[Any, Any]:
    """:func:`key_seeds` of an i32 or i64 key scalar (wrapping i32 arithmetic)."""
    lo = s.cast(key, "i32")
    s1 = _lower_mix(s, s.add(lo, _signed(GOLDEN)))
    if key.type == i32:
        return s1, s1
    hi = s.cast(s.shift_right(s.sub(key, s.cast(lo, "i64")), 32), "i32")
    return s1, s.xor(s1, _lower_mix(s, hi))


def _lower_mix(s: Any, x: Any) -> Any:
    for shift, factor in _MIX:
        x = s.xor(x, s.shift_right(x, shift))
        if factor is not None:
            x = s.mul(x, _signed(factor))
    return x


def _signed(u32: int) -> int:
    return u32 - (1 << 32) if u32 >= 1 << 31 else u32


def _strides(shape: tuple[int, ...]) -> list[int]:
    return [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]


def _lower_bits_as_float(s: Any, w: Any, drop: int, dtype: Any) -> Any:
    return s.unsigned_to_float(s.shift_right(w, drop), dtype)


def _lower_uniform(s: Any, w0: Any, w1: Any, dtype: Any) -> Any:
    if dtype == f32:
        return s.mul(_lower_bits_as_float(s, w0, 8, dtype), _2_POW[24])
    hi, lo = _lower_bits_as_float(s, w0, 5, dtype), _lower_bits_as_float(s, w1, 6, dtype)
    return s.mul(s.add(s.mul(hi, 2.0**26), lo), _2_POW[53])


_COS_TAYLOR = tuple((-1) ** k / math.factorial(2 * k) for k in range(8, -1, -1))
"""``cos x = sum (-1)^k x^2k / (2k)!`` to ``x^16``: 5e-13 off on ``[0, pi/2]``."""


def _cos_2pi(s: Any, u: Any) -> Any:
    """``cos(2 pi u)`` for ``u`` in ``[0, 1)`` as a vectorizable polynomial (``math.cos``
    is one libm call per element): reduced exactly to ``b = min(a, 1/2 - a)`` in
    ``[0, 1/4]``, ``a = |u - 1/2|``, then ``cos(2 pi u) = -+cos(2 pi b)``."""
    a = s.abs(s.sub(u, 0.5))
    b = s.min(a, s.sub(0.5, a))
    x = s.mul(b, 2 * math.pi)
    x2 = s.mul(x, x)
    c = _COS_TAYLOR[0]
    cos_b: Any = s.scalar(c, x.type)
    for c in _COS_TAYLOR[1:]:
        cos_b = s.add(s.mul(cos_b, x2), c)
    return s.select(s.cmp("gt", a, 0.25), cos_b, s.neg(cos_b))


def _lower_normal(s: Any, w0: Any, w1: Any, dtype: Any) -> Any:
    u1 = s.mul(s.add(_lower_bits_as_float(s, w0, 8, dtype), 1.0), _2_POW[24])
    u2 = s.mul(_lower_bits_as_float(s, w1, 8, dtype), _2_POW[24])
    radius = s.sqrt(s.mul(s.log(u1), -2.0))
    return s.mul(radius, _cos_2pi(s, u2))


RngUniformOp = define_op(
    "RngUniformOp", RngOp, "rlx.rng_uniform",
    "Uniform samples in ``[0, 1)`` (24 random bits for f32, 53 for f64).",
    SAMPLE=staticmethod(_uniform), LOWER_SAMPLE=staticmethod(_lower_uniform))
RngNormalOp = define_op(
    "RngNormalOp", RngOp, "rlx.rng_normal",
    "Standard normal samples (Box-Muller on two 24-bit uniforms).",
    SAMPLE=staticmethod(_normal), LOWER_SAMPLE=staticmethod(_lower_normal))
OPS = [RngUniformOp, RngNormalOp]


def draw(op: type[RngOp], keys: np.ndarray, shape: tuple[int, ...],
         dtype: np.dtype) -> np.ndarray:
    """The samples of ``op`` (``RngUniformOp`` or ``RngNormalOp``) as numpy: one of shape
    ``shape[keys.ndim:]`` per key (the interpreter's rule, also used for concrete keys)."""
    sample = shape[keys.ndim:]
    check_sample_size(sample, ShapeError)
    counters = 2 * np.arange(int(np.prod(sample, dtype=np.int64)), dtype=np.int64)
    draws = [op.SAMPLE(words(int(k), counters), words(int(k), counters + 1), dtype)
             for k in keys.reshape(-1)]
    return np.stack(draws).reshape(shape) if draws else np.zeros(shape, dtype)


@INTERPRET.register(*OPS)
def _interpret_rng(op: RngOp, keys: np.ndarray) -> np.ndarray:
    return draw(type(op), keys, tuple(shape_of(op.result.type)), numpy_dtype(op.result.type))


VJP.register(*OPS)(no_gradient)
JVP.register(*OPS)(lambda ctx, op, t: [None])


@VMAP.register(*OPS)
def _vmap_rng(ctx: Any, op: RngOp, xs: list, batched: list) -> list:
    """Batched keys ``[B, *K]`` draw ``[B, *K, *S]``: each element from its own key."""
    return ctx.emit_like(op, xs, out_shapes=[shape_of(op.result.type)])


@LOWER.register(*OPS)
def _lower_rng(op: RngOp, e: Any, key: Any) -> Any:
    """One parallel generic over the result: each element's index in its sample hashed
    with its key (the key read through a map keeping the leading key dims)."""
    shape, etype = tuple(shape_of(op.result.type)), op.result.type.element_type
    n_keys = len(shape_of(key.type))

    def body(s: Any, k: Any, _out: Any) -> Any:
        w0, w1 = _lower_words(s, k, shape, n_keys)
        return type(op).LOWER_SAMPLE(s, w0, w1, etype)

    key_map = AffineMap(len(shape), 0, tuple(AffineExpr.dimension(d) for d in range(n_keys)))
    return e.generic([key], [e.empty(shape, etype)], [key_map, AffineMap.identity(len(shape))],
                     ["parallel"] * len(shape), body)
