"""Random numbers from explicit keys, as ``jax.random`` (ops: ``rlx.rng_uniform``,
``rlx.rng_normal``; the algorithm is in :mod:`rlx_mlir.dialects.random`).

A key is an integer: a Python int, a numpy i32, or a traced 0-d integer tensor. The same
key gives the same numbers; pass a new key each training step (an argument of the jitted
step, e.g. the step number) and the one compiled program draws fresh numbers::

    @rlx.jit
    def step(params, x, key):
        h = rlx.nn.dropout(rlx.nn.relu(x @ params["w"]), 0.1, key)
        ...

    step(params, x, np.int32(i))

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

_KEY_BITS = 2.0**31
_SPLIT_STREAM = 0x5BD1E995
"""Added to a key before :func:`split` draws from it: the children come from another
stream than the parent's own samples."""


def _concrete_key(key: Any) -> np.ndarray | None:
    """A Python or numpy integer key as a 0-d i32 array (None for a traced one): a 64-bit
    key is folded as a traced i64 one is (:func:`_fold`); a wider one is an error."""
    if isinstance(key, Tensor):
        return None
    if isinstance(key, np.ndarray) and key.shape == () and key.dtype.kind in "iu":
        key = key.item()
    if not isinstance(key, (int, np.integer)) or isinstance(key, (bool, np.bool_)):
        raise _key_error(f"an array of shape {key.shape}" if isinstance(key, np.ndarray)
                         else type(key).__name__)
    if not -(2**63) <= int(key) < 2**64:
        raise RlxError(f"the random key {int(key)} does not fit 64 bits",
                       loc=loc_from_attr(_user_location()))
    wrapped = (int(key) + 2**63) % 2**64 - 2**63  # a uint64 key as the i64 of its bits
    return np.asarray(_fold(wrapped), np.int32)


def _key_error(what: str) -> RlxError:
    return RlxError(f"a random key must be an integer scalar (a Python int, np.int32, or a "
                    f"0-d integer tensor, e.g. an element of rlx.random.split); got {what}",
                    loc=loc_from_attr(_user_location()))


def _key(key: Tensor) -> Tensor:
    """A traced key as the 0-d i32 the ops take (an i64 one folded by :func:`_fold`)."""
    if key.shape != () or key.dtype not in ("i32", "i64"):
        raise _key_error(f"{key.dtype}{list(key.shape)}")
    return key if key.dtype == "i32" else _fold(key).astype("i32")


_FOLD = 0x9E3779B1
_2_32 = 2**32


def _fold(key: Any) -> Any:
    """A 64-bit key as one of 32 bits (a Python int, or an i64 tensor: the same wrapping
    arithmetic): ``lo + hi * 0x9E3779B1`` with ``lo`` its sign-extended low 32 bits, so an
    int32 key is itself and wider keys do not collide with its low bits."""
    lo = (key + 2**31) % _2_32 - 2**31
    hi = (key - lo) // _2_32
    return (lo + hi * _FOLD + 2**31) % _2_32 - 2**31


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
    from rlx_mlir import nn

    scaled = u * (maxval - minval) + minval
    # rounding can reach maxval itself (u = 1 - 2^-24 with [1, 2)): that draw is minval
    out = nn.where(scaled < maxval, scaled, minval)
    if isinstance(out, np.ndarray) and isinstance(u, np.ndarray) and out.dtype != u.dtype:
        out = out.astype(u.dtype)  # numpy f64 bounds do not widen the dtype asked for
    return out


def normal(key: Any, shape: Sequence[int] | int = (), dtype: Any = "f32") -> Tensor:
    """Standard normal samples (``jax.random.normal``)."""
    return _sample("rng_normal", key, shape, dtype)


def bernoulli(key: Any, p: float = 0.5, shape: Sequence[int] | int = ()) -> Tensor:
    """Booleans, true with probability ``p`` (``jax.random.bernoulli``); ``p`` broadcasts
    to ``shape``."""
    p_shape = p.shape if isinstance(p, Tensor) else np.shape(p)
    dims = _dims(shape)
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
    return _sample("rng_uniform", key, shape, "f32") < p


def split(key: Any, num: int = 2) -> tuple[Tensor, ...]:
    """A tuple of ``num`` new keys (0-d i32) derived from ``key``, as
    ``jax.random.split`` (``k1, k2 = rlx.random.split(key)``); drawn from another stream
    than ``key``'s own samples."""
    concrete = _concrete_key(key)
    if concrete is None:
        shifted = _key(key) + np.int32(_SPLIT_STREAM)
    else:  # the same wrapping i32 sum
        shifted = np.int32((int(concrete) + _SPLIT_STREAM + 2**31) % 2**32 - 2**31)
    bits = _sample("rng_uniform", shifted, _dims(num), "f64")
    keys = (bits * _KEY_BITS).astype(np.int32)
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
