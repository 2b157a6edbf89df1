"""Quantization: int8 quantize/dequantize and fake quantization for quantization-aware
training (ops in :mod:`rlx_mlir.dialects.quant`, SPEC 2.3.1).

Scales and zero points are numbers (one per tensor) or ``[C]`` arrays / tensors along
``axis``; rounding is half away from zero::

    w_q = rlx.quant.fake_quantize(w, bits=4, axis=1, ste="clipped_identity")  # QAT
    y = rlx.quant.fake_quantize_lsq(x, step)          # a learnable step size (LSQ)
    q = rlx.quant.quantize(x, 0.05, zero_point=3)      # int8 for inference
    x_hat = rlx.quant.dequantize(q, 0.05, zero_point=3)
    y_q = rlx.quant.qmatmul(q, w_q, bias, multiplier=0.01)   # int8 x int8 -> int8
    y = rlx.quant.dequant_matmul(x, w_q, scales, block_size=32)   # int8 weights only

Called outside a trace on numpy arrays, they run at once (as ``rlx.nn`` functions do).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from rlx_mlir.builder import Builder, Tensor, _user_location, innermost
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.dialects.base import FLOAT_DTYPES, REAL_FLOAT_DTYPES
from rlx_mlir.dialects.quant import STES
from rlx_mlir.nn import _axis, _eager, _half_in_f32, _integer, floor, stack, where


def _error(message: str) -> RlxError:
    return RlxError(message, loc=loc_from_attr(_user_location()))


def _float_input(caller: str, x: Any, *others: Any) -> Tensor:
    """``x`` as a float tensor: a numpy array next to a traced scale becomes a constant
    of the scale's trace (``grad`` with respect to the step of fixed data)."""
    traced = [o for o in others if isinstance(o, Tensor)]
    if isinstance(x, (np.ndarray, np.generic)) and traced:
        x = innermost(*traced).constant(np.asarray(x))
    if not isinstance(x, Tensor):
        raise _error(f"{caller}: expected a traced tensor (outside a trace, numpy arrays "
                     f"too), got {type(x).__name__}")
    if x.dtype in ("f16", "bf16"):  # next to f32 scales or zero points: f32, as JAX promotes
        return x.astype("f32")
    if x.dtype not in FLOAT_DTYPES:
        raise _error(f"{caller}: expected a float array (f32, f64, f16, bf16), got {x.dtype} "
                     "(cast it first)")
    return x


def _per_channel(caller: str, value: Any, b: Builder, like: Tensor, axis: int | None,
                 dtype: str, what: str) -> Tensor:
    """``value`` as a tensor of ``dtype`` emitted by ``b``: a number (per tensor, or the
    same for every channel) or ``[C]``."""
    tensor = _as_tensor(caller, value, b, dtype, what,
                        None if axis is None else (like.shape[axis],))
    if axis is None and tensor.shape == (1,):
        return tensor
    want = () if axis is None else (like.shape[axis],)
    if tensor.shape != want:
        shape = "a number" if axis is None else f"[{like.shape[axis]}] (the extent of axis {axis})"
        raise _error(f"{caller}: {what} must be {shape}, got shape {list(tensor.shape)}")
    return tensor


def _as_tensor(caller: str, value: Any, b: Builder, dtype: str, what: str,
               spread: tuple[int, ...] | None) -> Tensor:
    """A scale (``dtype`` float) or zero point (``"i32"``) as a tensor of ``dtype``: a
    traced one cast, or a constant; a number is spread to the shape ``spread`` if given."""
    if isinstance(value, Tensor):
        if dtype == "i32" and value.dtype not in ("i8", "i32", "i64"):
            raise _error(f"{caller}: {what} must be an integer tensor, got {value.dtype}")
        return value if value.dtype == dtype else value.astype(dtype)
    array = _constant_array(caller, value, dtype, what)
    return b.constant(np.broadcast_to(array, spread).copy() if spread and array.ndim == 0
                      else array)


def _constant_array(caller: str, value: Any, dtype: str, what: str) -> np.ndarray:
    """A concrete scale (positive numbers) or zero point (integers) as a numpy array."""
    from rlx_mlir.dialects.base import NUMPY_DTYPES

    try:
        given = np.asarray(value)
        array = given.astype(NUMPY_DTYPES[dtype])
    except (TypeError, ValueError):
        given = array = None
    if array is None or (given.dtype.kind not in "iuf" and given.dtype not in (
            NUMPY_DTYPES["bf16"],)) or (
            dtype == "i32" and not np.array_equal(array, given)):
        kind = "integers" if dtype == "i32" else "numbers"
        raise _error(f"{caller}: {what} must be {kind} (a number or an array), got {value!r}")
    if dtype != "i32" and not (array > 0).all():
        raise _error(f"{caller}: {what} must be positive, got {value!r}")
    return array


def _builder(*values: Any) -> Builder:
    """The innermost trace among the tensor arguments (a closure's, not its parent's)."""
    return innermost(*(v for v in values if isinstance(v, Tensor)))


def _channel(caller: str, x: Tensor, axis: Any) -> int | None:
    return None if axis is None else _axis(_integer(axis), x.ndim, caller)


def _bits(caller: str, bits: Any) -> int:
    bits = _integer(bits)
    if bits not in (8, 4, 2) or isinstance(bits, bool):
        raise _error(f"{caller}: bits must be 8, 4 or 2, got {bits!r}")
    return int(bits)


def quantize(x: Tensor, scale: Any, zero_point: Any = 0, axis: int | None = None) -> Tensor:
    """``clamp(round(x / scale) + zero_point, -128, 127)`` as an i8 tensor (no gradient;
    NaN gives the zero point).

    >>> rlx.quant.quantize(np.array([0.5, -1.0, 30.0], np.float32), 0.05, 3)  # doctest: +SKIP
    array([ 13, -17, 127], dtype=int8)
    """
    x = _float_input("quantize", x, scale, zero_point)
    a = _channel("quantize", x, axis)
    b = _builder(x, scale, zero_point)
    s = _per_channel("quantize", scale, b, x, a, x.dtype, "scale")
    zp = _per_channel("quantize", zero_point, b, x, a, "i32", "zero_point")
    return b.quantize(x, s, zp, axis=a)


def dequantize(q: Tensor, scale: Any, zero_point: Any = 0, axis: int | None = None,
               dtype: str = "f32") -> Tensor:
    """``(q - zero_point) * scale`` of an i8 tensor, as ``dtype`` (f32, f64, f16, bf16)."""
    if not isinstance(q, Tensor) or q.dtype != "i8":
        got = q.dtype if isinstance(q, Tensor) else type(q).__name__
        raise _error(f"dequantize: expected an i8 tensor or array, got {got}")
    from rlx_mlir.builder import _dtype_name

    name = _dtype_name(dtype) if dtype is not None else None  # "float32", np.float32 too
    if name not in REAL_FLOAT_DTYPES:
        raise _error(f"dequantize: dtype must be f32, f64, f16 or bf16, got {dtype!r}")
    dtype = name
    a = _channel("dequantize", q, axis)
    b = _builder(q, scale, zero_point)
    wide = "f64" if dtype == "f64" else "f32"
    s = _per_channel("dequantize", scale, b, q, a, wide, "scale")
    zp = _per_channel("dequantize", zero_point, b, q, a, "i32", "zero_point")
    return b.dequantize(q, s, zp, axis=a).astype(dtype)


def qmatmul(x: Tensor, w: Tensor, bias: Any = None, multiplier: float = 1.0,
            x_zero_point: int = 0, w_zero_point: int = 0, out_zero_point: int = 0) -> Tensor:
    """Integer matmul of i8 ``x [M, K]`` and ``w [K, N]``: ``acc = bias + sum (x - x_zp)(w -
    w_zp)`` in i32, requantized to i8 as ``clamp(round(acc * multiplier) + out_zp)``."""
    if isinstance(x, Tensor) and isinstance(w, (np.ndarray, np.generic)):
        w = x.builder.constant(np.asarray(w)) if np.asarray(w).dtype == np.int8 else w
    for name, t in (("x", x), ("w", w)):
        if not isinstance(t, Tensor) or t.dtype != "i8" or t.ndim != 2:
            shape = f"{np.asarray(t).dtype}{list(np.shape(t))}"
            got = f"{t.dtype}{list(t.shape)}" if isinstance(t, Tensor) else (
                f"a numpy {shape} (inside a trace, pass x as a traced tensor)"
                if name == "x" else shape)
            raise _error(f"qmatmul: {name} must be a 2-d i8 array, got {got}")
    if bias is None:
        bias = np.zeros(w.shape[1], np.int32)
    builder = _builder(x, w, bias)
    b = bias.astype("i32") if isinstance(bias, Tensor) else builder.constant(
        _constant_array("qmatmul", bias, "i32", "bias"))
    for name, zp in (("x_zero_point", x_zero_point), ("w_zero_point", w_zero_point),
                     ("out_zero_point", out_zero_point)):
        zp = _integer(zp)
        if isinstance(zp, bool) or not isinstance(zp, (int, np.integer)) or \
                not -128 <= zp <= 127:
            raise _error(f"qmatmul: {name} must be an int in [-128, 127], got {zp!r}")
    multiplier = _integer(multiplier)
    if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float, np.number)) \
            or not np.isfinite(multiplier) or multiplier <= 0:
        raise _error(f"qmatmul: multiplier must be a positive number, got {multiplier!r}")
    return builder.qmatmul(x, w, b, x_zp=int(_integer(x_zero_point)),
                           w_zp=int(_integer(w_zero_point)),
                           out_zp=int(_integer(out_zero_point)), mult=float(multiplier))


def fake_quantize(x: Tensor, bits: int = 8, axis: int | None = None, ste: str = "identity",
                  scale: Any = None) -> Tensor:
    """Symmetric quantise-dequantise to ``2^bits - 1`` levels with the per-batch scale
    ``max|x| / (2^(bits-1) - 1)`` (per channel along ``axis``), or ``scale`` when given;
    its gradient is the straight-through estimate ``ste``: ``identity``,
    ``clipped_identity``, ``tanh`` or ``hard_tanh``.

    >>> rlx.quant.fake_quantize(np.array([0.4, -1.2, 6.0], np.float32), bits=4)  # doctest: +SKIP
    array([ 0.        , -0.85714287,  6.        ], dtype=float32)
    """
    x = _float_input("fake_quantize", x, scale)
    a = _channel("fake_quantize", x, axis)
    if ste not in STES:
        raise _error(f"fake_quantize: ste must be one of {', '.join(STES)}, got {ste!r}")
    b = _builder(x, scale)
    operands = [x] if scale is None else [
        x, _per_channel("fake_quantize", scale, b, x, a, x.dtype, "scale")]
    return b.fake_quantize(*operands, bits=_bits("fake_quantize", bits), axis=a, ste=ste)


def fake_quantize_lsq(x: Tensor, scale: Any, bits: int = 8, axis: int | None = None) -> Tensor:
    """Quantise-dequantise with a learnable step ``scale`` (LSQ): ``grad`` flows to ``x``
    inside the range and to ``scale`` (``round(x/s) - x/s``, or ``+-q`` outside)."""
    x = _float_input("fake_quantize_lsq", x, scale)
    a = _channel("fake_quantize_lsq", x, axis)
    b = _builder(x, scale)
    s = _per_channel("fake_quantize_lsq", scale, b, x, a, x.dtype, "scale")
    return b.fake_quantize_lsq(x, s, bits=_bits("fake_quantize_lsq", bits), axis=a)


def dequant_matmul(x: Tensor, w_q: Any, scale: Any, zero_point: Any = None,
                   block_size: int | None = None, scheme: str = "int8",
                   global_scale: Any = 1.0) -> Tensor:
    """Weight-only quantized matmul (SPEC 2.3.1 ``DequantMatMul``): ``x @ w`` with
    ``w[k, n] = (level[k, n] - zero_point[k // bs, n]) * scale[k // bs, n]`` for ``scale`` /
    ``zero_point`` of shape ``[K / bs, N]`` (``bs = block_size``; None: one block, ``[N]``
    per column). ``scheme`` says how ``w_q`` holds the levels (:data:`DEQUANT_SCHEMES`):
    ``"int8"`` i8 ``[K, N]``; ``"int4"`` / ``"uint4"`` bytes ``[K, N / 2]``, two nibbles
    each, low nibble first (signed -8..7 / unsigned 0..15); ``"fp8_e4m3"`` / ``"fp8_e5m2"``
    bytes ``[K, N]`` (OCP FP8, as ``ml_dtypes.float8_e4m3fn`` / ``float8_e5m2``);
    ``"nvfp4"`` E2M1 nibbles ``[K, N / 2]`` whose ``scale`` is E4M3 bytes ``[K / 16, N]``,
    times ``global_scale``. Bytes are i8 or uint8 arrays (i8 tensors when traced). The
    weights are decoded per call; gradients reach ``x`` and a traced float ``scale``.

    >>> y = rlx.quant.dequant_matmul(x, w_q, scales, block_size=32)  # doctest: +SKIP
    >>> y = rlx.quant.dequant_matmul(x, packed, scales, block_size=32, scheme="int4")  # doctest: +SKIP
    """
    caller = "dequant_matmul"
    decoder = _scheme(caller, scheme)
    w_q = _byte_operand(caller, w_q, decoder, _trace_of(x, scale, zero_point))
    if isinstance(x, (np.ndarray, np.generic)):
        x = w_q.builder.constant(np.asarray(x))
    x = _float_input(caller, x, w_q, scale)
    b = _builder(x, w_q, scale, zero_point)
    k, n = w_q.shape[0], w_q.shape[1] * (2 if decoder.packed else 1)
    size = _block_size(caller, block_size, k, decoder)
    blocks = k // size
    grid = (n,) if block_size is None and decoder.group is None else (blocks, n)
    shift = None
    if zero_point is not None:
        if not decoder.zero_point:
            raise _error(f"{caller}: scheme {decoder.name!r} takes no zero_point")
        shift = _block_grid(caller, zero_point, b, "i32", grid, "zero_point").astype(x.dtype)
    s = _scale_grid(caller, scale, b, x.dtype, grid, decoder)
    if decoder.group is None and not (isinstance(global_scale, (int, float, np.number))
                                      and not isinstance(global_scale, bool)
                                      and global_scale == 1.0):
        raise _error(f"{caller}: global_scale is for scheme 'nvfp4' only (scheme "
                     f"{decoder.name!r} takes its scales in scale); got {global_scale!r}")
    if decoder.group is not None:
        s = s * _number_or_tensor(caller, global_scale, b, x.dtype, "global_scale")
    bytes_ = w_q.reshape((blocks, size, w_q.shape[1]))
    products = []
    for part in range(2 if decoder.packed else 1):  # packed: even, then odd columns
        q = _levels(b, bytes_, decoder, x.dtype, part)
        if shift is not None:
            q = q - _columns(shift, blocks, part, decoder.packed)
        w = q * _columns(s, blocks, part, decoder.packed)
        products.append(x @ w.reshape((k, w_q.shape[1])))
    if not decoder.packed:
        return products[0]
    pairs = stack(products, axis=0)  # [2, ..., N / 2] -> [..., N / 2, 2]: interleaved
    perm = (*range(1, pairs.ndim), 0)
    return pairs.transpose(*perm).reshape((*products[0].shape[:-1], n))


def _columns(grid: Tensor, blocks: int, part: int, packed: bool) -> Tensor:
    """A ``[blocks, N]`` (or ``[N]``) scale or zero point as ``[blocks, 1, N]``; packed,
    only its even (``part`` 0) or odd (1) columns, copied out by one transpose (read in
    place, with a stride of 2, the decode step's vector loads became scalar ones: int4
    ``1x4096x4096`` 39 ms against 1.6)."""
    if packed:
        grid = grid.reshape((blocks, -1, 2)).transpose(2, 0, 1)[part]
    return grid.reshape((blocks, 1, -1))


@dataclass(frozen=True)
class ByteScheme:
    """How a weight-only scheme stores its levels: ``decode`` maps bytes (0..255) to
    levels, one per byte, or two (``packed``: low nibble, high nibble)."""

    name: str
    decode: Callable[[np.ndarray], tuple[np.ndarray, ...]] | None  # None: i8 levels as they are
    packed: bool = False
    zero_point: bool = True
    group: int | None = None  # a fixed block of K whose scale is E4M3 bytes (NVFP4)
    arithmetic: Callable[[Tensor, int], Tensor] | None = None
    """Levels computed from the bytes (as floats) by arithmetic instead of a table lookup,
    for part 0 or 1: plain float ops vectorize, and the lowering decodes them inside a
    decode step's matmul (:mod:`rlx_mlir.lowering.skinny_decode`)."""


def _nibbles(u: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    low, high = (u & 15).astype(np.int64), (u >> 4).astype(np.int64)
    return (low - 16 * (low >= 8), high - 16 * (high >= 8)) if signed else (low, high)


def _nibble_arithmetic(signed: bool) -> Callable[[Tensor, int], Tensor]:
    """Nibble ``part`` of bytes ``b`` held as floats (-128..127, exact): the signed high
    nibble is ``floor(b / 16)``, the unsigned low one ``b - 16 * high``. The low part
    takes ``floor((b + 0.5) / 16)`` (the same for integers): CSE then does not share one
    materialised ``high`` between the two parts' decodes, each stays fused into its own
    product."""

    def levels(b: Tensor, part: int) -> Tensor:
        if part == 1:
            high = floor(b * (1 / 16))
            return high if signed else where(high < 0, high + 16, high)
        low = b - floor((b + 0.5) * (1 / 16)) * 16
        return where(low >= 8, low - 16, low) if signed else low

    return levels


def _float_bytes(dtype: Any) -> Callable[[np.ndarray], tuple[np.ndarray]]:
    return lambda u: (u.view(dtype).astype(np.float64),)


def _e2m1(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    return values[u & 15], values[u >> 4]


DEQUANT_SCHEMES = {s.name: s for s in (
    ByteScheme("int8", None),
    ByteScheme("int4", lambda u: _nibbles(u, True), packed=True,
               arithmetic=_nibble_arithmetic(True)),
    ByteScheme("uint4", lambda u: _nibbles(u, False), packed=True,
               arithmetic=_nibble_arithmetic(False)),
    ByteScheme("fp8_e4m3", _float_bytes(ml_dtypes.float8_e4m3fn), zero_point=False),
    ByteScheme("fp8_e5m2", _float_bytes(ml_dtypes.float8_e5m2), zero_point=False),
    ByteScheme("nvfp4", _e2m1, packed=True, zero_point=False, group=16),
)}
"""``dequant_matmul``'s schemes by name (SPEC's Int8Block(Asym), Int4Block, Fp8E4m3,
Fp8E5m2, Nvfp4Block)."""


def _scheme(caller: str, scheme: Any) -> ByteScheme:
    if not isinstance(scheme, str) or scheme not in DEQUANT_SCHEMES:
        raise _error(f"{caller}: scheme must be one of {', '.join(DEQUANT_SCHEMES)}, got "
                     f"{scheme!r}")
    return DEQUANT_SCHEMES[scheme]


_FLOAT8 = {"fp8_e4m3": ml_dtypes.float8_e4m3fn, "fp8_e5m2": ml_dtypes.float8_e5m2}


def _trace_of(*values: Any) -> Builder | None:
    """The innermost trace among the tensors in ``values``, else the active one."""
    from rlx_mlir.frontend.tracing import _active

    traced = [v for v in values if isinstance(v, Tensor)]
    return innermost(*traced) if traced else (_active()[-1] if _active() else None)


def _byte_operand(caller: str, w_q: Any, decoder: ByteScheme, trace: Builder | None,
                  what: str = "w_q", want: str | None = None,
                  scheme: str | None = None) -> Tensor:
    """``w_q`` as a 2-d i8 tensor: numpy bytes (int8; uint8 and this scheme's float8 dtype
    too for byte schemes) become a constant of ``trace``."""
    if isinstance(w_q, (np.ndarray, np.generic)):
        array = np.asarray(w_q)
        if decoder.decode is not None and array.dtype in (np.uint8, _FLOAT8.get(decoder.name)):
            array = array.view(np.int8)
        if trace is not None and array.dtype == np.int8:
            w_q = trace.constant(array)
    if not isinstance(w_q, Tensor) or w_q.dtype != "i8" or w_q.ndim != 2:
        got = f"{w_q.dtype}{list(w_q.shape)}" if isinstance(w_q, Tensor) else \
            f"{np.asarray(w_q).dtype}{list(np.shape(w_q))}"
        want = want or ("a 2-d i8 array [K, N]" if decoder.decode is None else
                        f"a 2-d byte array (int8 or uint8) [K, {'N / 2' if decoder.packed else 'N'}]")
        raise _error(f"{caller}: {what} must be {want} for scheme {scheme or decoder.name!r}, "
                     f"got {got}")
    return w_q


def _levels(b: Builder, w_q: Tensor, decoder: ByteScheme, dtype: str, part: int = 0) -> Tensor:
    """The levels ``w_q``'s bytes hold (the low nibbles for ``part`` 0 of a packed scheme,
    the high ones for 1): by the scheme's arithmetic, else each a lookup in a 256-entry
    constant table."""
    if decoder.decode is None:
        return w_q.astype(dtype)
    if decoder.arithmetic is not None:
        return decoder.arithmetic(w_q.astype(dtype), part)
    from rlx_mlir.dialects.base import NUMPY_DTYPES

    unsigned = ((np.arange(256) - 128) & 255).astype(np.uint8)  # by signed byte + 128
    table = np.concatenate(decoder.decode(unsigned)).astype(NUMPY_DTYPES[dtype])
    # part 1 reads the second half: its index differs, so CSE does not merge the two
    # lookups' index computations into one materialised tensor
    return b.gather(b.constant(table), w_q.astype("i32") + (128 + 256 * part), axis=0)


def _block_size(caller: str, block_size: Any, k: int, decoder: ByteScheme) -> int:
    if decoder.group is not None and block_size not in (None, decoder.group):
        raise _error(f"{caller}: scheme {decoder.name!r} has blocks of {decoder.group}, got "
                     f"block_size={block_size!r}")
    size = decoder.group or (k if block_size is None else _integer(block_size))
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1 or k % size:
        raise _error(f"{caller}: block_size must be a positive int dividing K = {k}, got "
                     f"{block_size if decoder.group is None else size!r}")
    return int(size)


def _scale_grid(caller: str, scale: Any, b: Builder, dtype: str, grid: tuple[int, ...],
                decoder: ByteScheme) -> Tensor:
    """Float scales of shape ``grid``; for NVFP4, E4M3 bytes decoded."""
    if decoder.group is None:
        return _block_grid(caller, scale, b, dtype, grid, "scale")
    e4m3 = DEQUANT_SCHEMES["fp8_e4m3"]
    want = f"E4M3 bytes (uint8, int8 or float8_e4m3fn) of shape {list(grid)}"
    scale = _byte_operand(caller, scale, e4m3, b, "scale", want, scheme=decoder.name)
    if scale.shape != grid:
        raise _error(f"{caller}: scale must be {want} (blocks of 16 along K, N), got "
                     f"{list(scale.shape)}")
    return _levels(b, scale, e4m3, dtype)


def _number_or_tensor(caller: str, value: Any, b: Builder, dtype: str, what: str) -> Tensor:
    """A positive number, or a traced scalar tensor, as a ``dtype`` scalar."""
    if isinstance(value, Tensor):
        if value.shape not in ((), (1,)) or value.dtype not in FLOAT_DTYPES:
            raise _error(f"{caller}: {what} must be a float scalar, got "
                         f"{value.dtype}{list(value.shape)}")
        return value.astype(dtype)
    array = _constant_array(caller, value, dtype, what)
    if array.size != 1:
        raise _error(f"{caller}: {what} must be a number, got shape {list(array.shape)}")
    return b.constant(array.reshape(()))


def _block_grid(caller: str, value: Any, b: Builder, dtype: str, grid: tuple[int, ...],
                what: str) -> Tensor:
    """A scale or zero point of shape ``grid`` as a tensor of ``dtype``."""
    tensor = _as_tensor(caller, value, b, dtype, what, grid)
    if tensor.shape != grid:
        raise _error(f"{caller}: {what} must have shape {list(grid)} (blocks of K, N), got "
                     f"{list(tensor.shape)}")
    return tensor


quantize, qmatmul, fake_quantize, fake_quantize_lsq, dequant_matmul = (
    _eager(_half_in_f32(f))
    for f in (quantize, qmatmul, fake_quantize, fake_quantize_lsq, dequant_matmul))
dequantize = _eager(dequantize)  # its dtype argument decides the result's
