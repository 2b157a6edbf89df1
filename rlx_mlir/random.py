"""Random numbers from explicit keys, as ``jax.random`` (ops: ``rlx.rng_uniform``,
``rlx.rng_normal``; the algorithm is in :mod:`rlx_mlir.dialects.random`).

A key is an integer: :func:`key` (an ``np.int64``), a Python or numpy integer, or a
traced 0-d i64 or i32 tensor. The same key gives the same numbers; pass a new key each
training step (an argument of the jitted step, e.g. from ``split``) and the one compiled
program draws fresh numbers::

    @rlx.jit
    def step(params, x, key):
        h = rlx.nn.dropout(rlx.nn.relu(x @ params["w"]), 0.1, key)
        ...

    key = rlx.random.key(0)
    for i in range(steps):
        key, sub = rlx.random.split(key)
        step(params, x, sub)

With a concrete key (a Python or numpy integer), each function draws at once and returns
numpy, inside a trace too (where the numbers enter as a constant).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlx_mlir.builder import Tensor, _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.dialects.base import FLOAT_DTYPES, NUMPY_DTYPES, tensor

_SPLIT_STREAM = 0x5BD1E995
"""Added to a key before :func:`split` draws from it: the children come from another
stream than the parent's own samples."""
_KEY_BITS = {"i64": (2.0**53, 0.0), "i32": (2.0**32, 2.0**31)}
"""(scale, offset) of the f64 uniform :func:`split` turns into a key: 53 random bits (all
an f64 uniform has) for i64 keys, all 32 for i32 ones."""
_KEY_DTYPE = {4: "i32", 8: "i64"}


def key(seed: int) -> np.ndarray:
    """A 0-d ``np.int64`` key (``jax.random.key``). Any integer is a key, but :func:`split`
    gives keys of its key's dtype, and i64 ones (53 random bits) are the ones that do not
    repeat in long runs: a Python int is an i32 key (as ``jit`` takes it).

    >>> k1, k2 = rlx.random.split(rlx.random.key(0))    # doctest: +SKIP
    """
    return _concrete_key(seed).astype(np.int64)


def _concrete_key(key: Any) -> np.ndarray | None:
    """A Python or numpy integer key as a 0-d array: int32 for a Python int that fits (as
    ``jit`` takes it) or a numpy integer of 32 bits or fewer, else int64 (None for a
    traced key); wider than 64 bits is an error. Samples depend on the value only."""
    if isinstance(key, Tensor):
        return None
    if isinstance(key, np.ndarray) and key.shape == () and key.dtype.kind in "iu":
        key = key[()]
    if not isinstance(key, (int, np.integer)) or isinstance(key, (bool, np.bool_)):
        raise _key_error(f"an array of shape {key.shape}" if isinstance(key, np.ndarray)
                         else type(key).__name__)
    if not -(2**63) <= int(key) < 2**64:
        raise RlxError(f"the random key {int(key)} does not fit 64 bits",
                       loc=loc_from_attr(_user_location()))
    wrapped = (int(key) + 2**63) % 2**64 - 2**63  # a uint64 key as the i64 of its bits
    narrow = -(2**31) <= wrapped < 2**31 and (
        isinstance(key, int) or key.dtype.itemsize <= 4)  # type: ignore[union-attr]
    return np.asarray(wrapped, np.int32 if narrow else np.int64)


def _key_error(what: str) -> RlxError:
    return RlxError(f"a random key must be an integer scalar (rlx.random.key(seed), a Python "
                    f"int, np.int64, or a 0-d integer tensor, e.g. an element of "
                    f"rlx.random.split); got {what}", loc=loc_from_attr(_user_location()))


def _key(key: Tensor) -> Tensor:
    """A traced key as the 0-d i64 or i32 the ops take (narrower ints widen to i32)."""
    if key.shape != () or key.dtype not in ("i8", "i16", "i32", "i64", "ui8", "ui16",
                                            "ui32", "ui64"):
        raise _key_error(f"{key.dtype}{list(key.shape)}")
    return key if key.dtype in ("i32", "i64") else key.astype(
        "i64" if key.dtype in ("ui32", "ui64") else "i32")


def _dims(shape: Any) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else shape
    try:
        dims = tuple(operator.index(d) for d in dims)
    except TypeError:
        dims = None
    if dims is None or any(d < 0 for d in dims):
        raise RlxError(f"a random shape is a tuple of non-negative ints; got {shape!r}",
                       loc=loc_from_attr(_user_location()))
    return dims


def _sample(op: str, key: Any, shape: Any, dtype: Any) -> Tensor | np.ndarray:
    """``rlx.<op>`` samples; a concrete key (even inside a trace) draws them at once, as
    numpy, which any trace takes as a constant."""
    from rlx_mlir.builder import _dtype_name

    name = _dtype_name(dtype)
    if name not in FLOAT_DTYPES:
        raise RlxError(f"random samples are f32 or f64; got {dtype!r} (draw f32 and round "
                       "with .astype for f16/bf16)",
                       loc=loc_from_attr(_user_location()))
    dims = _dims(shape)
    concrete = _concrete_key(key)
    if concrete is not None:
        from rlx_mlir.dialects import random as ops

        kind = {"rng_uniform": ops.RngUniformOp, "rng_normal": ops.RngNormalOp}[op]
        ops.check_sample_size(dims, lambda message: RlxError(
            message, loc=loc_from_attr(_user_location())))
        return ops.draw(kind, concrete, dims, NUMPY_DTYPES[name])
    k = _key(key)
    return k.builder.emit(op, k, out=[tensor(dims, name)])  # type: ignore[return-value]


def _check_bound(name: str, bound: Any, dims: tuple[int, ...]) -> None:
    """A bound must be a number or float array broadcasting to the sample shape (as in
    ``jax.random.uniform``)."""
    if not isinstance(bound, Tensor) and np.asarray(bound).dtype.kind not in "fiu":
        raise RlxError(f"uniform: {name} must be a number or a float array, got {bound!r}",
                       loc=loc_from_attr(_user_location()))
    bound_shape = bound.shape if isinstance(bound, Tensor) else np.shape(bound)
    try:
        fits = np.broadcast_shapes(dims, bound_shape) == dims
    except ValueError:
        fits = False
    if not fits:
        raise RlxError(f"uniform: {name} of shape {list(bound_shape)} does not broadcast to "
                       f"the sample shape {list(dims)}", loc=loc_from_attr(_user_location()))


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)


def uniform(key: Any, shape: Sequence[int] | int = (), dtype: Any = "f32",
            minval: Any = 0.0, maxval: Any = 1.0) -> Tensor:
    """Uniform samples in ``[minval, maxval)`` (``jax.random.uniform``); the bounds may
    be tensors (broadcast with ``shape``) and get gradients.

    >>> rlx.random.uniform(0, (2, 3))                       # doctest: +SKIP
    """
    u = _sample("rng_uniform", key, shape, dtype)
    if _is_number(minval) and _is_number(maxval) and (minval, maxval) == (0, 1):
        return u
    for name, bound in (("minval", minval), ("maxval", maxval)):
        _check_bound(name, bound, _dims(shape))
    _check_interval(minval, maxval)
    from rlx_mlir import nn

    scaled = u * (maxval - minval) + minval
    # rounding can reach maxval itself (u = 1 - 2^-24 with [1, 2)): that draw is minval
    out = nn.where(scaled < maxval, scaled, minval)
    # f64 bounds do not widen the dtype asked for (JAX's rule), traced or not
    if isinstance(out, np.ndarray) and isinstance(u, np.ndarray) and out.dtype != u.dtype:
        out = out.astype(u.dtype)
    elif isinstance(out, Tensor) and out.dtype != _dtype_name(dtype):
        out = out.astype(_dtype_name(dtype))
    return out


def _dtype_name(dtype: Any) -> str:
    from rlx_mlir.builder import _dtype_name as name

    return name(dtype)


def _check_interval(minval: Any, maxval: Any) -> None:
    """Known bounds must be finite with ``minval <= maxval`` (``torch.Tensor.uniform_``'s
    rule; the samples would be all ``minval``, or NaN, without a word)."""
    if isinstance(minval, Tensor) or isinstance(maxval, Tensor):
        return
    low, high = np.asarray(minval, np.float64), np.asarray(maxval, np.float64)
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise RlxError(f"uniform: the bounds must be finite, got minval={minval!r}, "
                       f"maxval={maxval!r}", loc=loc_from_attr(_user_location()))
    if np.any(low > high):
        raise RlxError(f"uniform: minval {minval!r} is above maxval {maxval!r}",
                       loc=loc_from_attr(_user_location()))


def normal(key: Any, shape: Sequence[int] | int = (), dtype: Any = "f32") -> Tensor:
    """Standard normal samples (``jax.random.normal``)."""
    return _sample("rng_normal", key, shape, dtype)


def bernoulli(key: Any, p: Any = 0.5, shape: Sequence[int] | int | None = None) -> Tensor:
    """Booleans, true with probability ``p`` (``jax.random.bernoulli``); ``p`` broadcasts
    to ``shape`` (default: ``p``'s shape). A known ``p`` must lie in ``[0, 1]``."""
    p_shape = p.shape if isinstance(p, Tensor) else np.shape(p)
    dims = _dims(p_shape if shape is None else shape)
    try:
        fits = np.broadcast_shapes(p_shape, dims) == tuple(dims)
    except ValueError:
        fits = False
    if not fits:
        raise RlxError(f"bernoulli: p of shape {list(p_shape)} does not broadcast to shape "
                       f"{list(dims)}", loc=loc_from_attr(_user_location()))
    if not isinstance(p, Tensor) and np.asarray(p).dtype.kind not in "fiub":
        raise RlxError(f"bernoulli: p must be a number or a float array, got {p!r}",
                       loc=loc_from_attr(_user_location()))
    if not isinstance(p, Tensor) and not np.all((np.asarray(p) >= 0) & (np.asarray(p) <= 1)):
        raise RlxError(f"bernoulli: p must lie in [0, 1], got {p!r}",
                       loc=loc_from_attr(_user_location()))
    return _sample("rng_uniform", key, dims, "f32") < p


def split(key: Any, num: int = 2) -> tuple[Tensor, ...]:
    """A tuple of ``num`` new keys derived from ``key``, as ``jax.random.split``
    (``k1, k2 = rlx.random.split(key)``), drawn from another stream than ``key``'s own
    samples, of ``key``'s dtype: i64 keys have 53 random bits (a chain ``key, sub =
    split(key)`` revisits a key after about 2^26 steps), i32 keys 32 (after about 2^16:
    start from :func:`key`)."""
    concrete = _concrete_key(key)
    kind = _key(key).dtype if concrete is None else _KEY_DTYPE[concrete.dtype.itemsize]
    if concrete is None:
        shifted = _key(key).astype("i64") + np.int64(_SPLIT_STREAM)
    else:  # the same wrapping i64 sum
        shifted = np.int64((int(concrete) + _SPLIT_STREAM + 2**63) % 2**64 - 2**63)
    bits = _sample("rng_uniform", shifted, _dims(num), "f64")
    scale, offset = _KEY_BITS[kind]
    if concrete is not None:  # floor, then an exact conversion (a float cast rounds)
        keys = (np.floor(bits * scale) - offset).astype(NUMPY_DTYPES[kind])
    else:
        from rlx_mlir import nn

        keys = (nn.floor(bits * scale) - offset).astype(kind)
    return tuple(keys[i] for i in range(int(num)))





def categorical(key: Any, logits: Any, axis: int = -1) -> Tensor | np.ndarray:
    """Indices drawn with probabilities ``softmax(logits)`` along ``axis`` (i32, the
    axis removed), as ``jax.random.categorical``: the argmax of ``logits`` plus Gumbel
    noise ``-log(-log(u))``.

    >>> token = rlx.random.categorical(key, logits / temperature)  # doctest: +SKIP
    """
    from rlx_mlir import nn

    dtype = logits.dtype if isinstance(logits, Tensor) else str(np.asarray(logits).dtype)
    if dtype.startswith(("c", "complex", "bool", "i1")):
        raise RlxError(f"categorical takes real logits; got {dtype}",
                       loc=loc_from_attr(_user_location()))
    shape = logits.shape if isinstance(logits, Tensor) else np.shape(logits)
    if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
        raise RlxError(f"categorical: axis must be an int, got {axis!r}",
                       loc=loc_from_attr(_user_location()))
    if not -len(shape) <= axis < max(len(shape), 1) or not shape:
        raise RlxError(f"categorical: axis {axis} is out of range for logits of shape "
                       f"{list(shape)}", loc=loc_from_attr(_user_location()))
    u = uniform(key, shape, "f64" if dtype in ("f64", "float64") else "f32")
    tiny = np.finfo(np.float64 if dtype in ("f64", "float64") else np.float32).tiny
    # u = 0 (2^-24 a draw) would give -inf noise: a class of logit -inf could win. JAX
    # draws from [tiny, 1) for the same reason.
    u = np.maximum(u, tiny) if isinstance(u, np.ndarray) else nn.maximum(u, tiny)
    scores = logits + (-np.log(-np.log(u)) if isinstance(u, np.ndarray)
                       else -nn.log(-nn.log(u)))
    if isinstance(scores, Tensor):
        return nn.argmax(scores, axis=axis)
    return np.argmax(scores, axis=axis).astype(np.int32)  # all concrete: numpy's first max
