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
    """A Python or numpy integer key as a 0-d i32 array (None for a traced one); a key
    outside int32 is an error, traced or not (it would wrap to another key)."""
    if isinstance(key, Tensor):
        return None
    if isinstance(key, np.ndarray) and key.shape == () and key.dtype.kind in "iu":
        key = key.item()
    if not isinstance(key, (int, np.integer)) or isinstance(key, (bool, np.bool_)):
        raise _key_error(f"an array of shape {key.shape}" if isinstance(key, np.ndarray)
                         else type(key).__name__)
    _check_int32(int(key))
    return np.asarray(int(key), np.int32)


def _check_int32(key: int) -> None:
    info = np.iinfo(np.int32)
    if not info.min <= key <= info.max:
        raise RlxError(f"the random key {key} does not fit int32 (keys are i32 scalars)",
                       loc=loc_from_attr(_user_location()))


def _key_error(what: str) -> RlxError:
    return RlxError(f"a random key must be an integer scalar (a Python int, np.int32, or a "
                    f"0-d integer tensor, e.g. an element of rlx.random.split); got {what}",
                    loc=loc_from_attr(_user_location()))


def _key(key: Tensor) -> Tensor:
    """A traced key as the 0-d i32 the ops take (i64 keys keep their low 32 bits)."""
    if key.shape != () or key.dtype not in ("i32", "i64"):
        raise _key_error(f"{key.dtype}{list(key.shape)}")
    return key.astype("i32")


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
        raise RlxError(f"random samples are f32 or f64; got {dtype!r}",
                       loc=loc_from_attr(_user_location()))
    dims = _dims(shape)
    concrete = _concrete_key(key)
    if concrete is not None:
        from rlx_mlir.dialects import random as ops

        kind = {"rng_uniform": ops.RngUniformOp, "rng_normal": ops.RngNormalOp}[op]
        return ops.draw(kind, concrete, dims, NUMPY_DTYPES[name])
    k = _key(key)
    return k.builder.emit(op, k, out=[tensor(dims, name)])  # type: ignore[return-value]


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
    from rlx_mlir import nn

    scaled = u * (maxval - minval) + minval
    # rounding can reach maxval itself (u = 1 - 2^-24 with [1, 2)): that draw is minval
    return nn.where(scaled < maxval, scaled, minval)


def normal(key: Any, shape: Sequence[int] | int = (), dtype: Any = "f32") -> Tensor:
    """Standard normal samples (``jax.random.normal``)."""
    return _sample("rng_normal", key, shape, dtype)


def bernoulli(key: Any, p: float = 0.5, shape: Sequence[int] | int = ()) -> Tensor:
    """Booleans, true with probability ``p`` (``jax.random.bernoulli``)."""
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

    wide = str(getattr(logits, "dtype", "")) in ("f64", "float64")
    u = uniform(key, np.shape(logits) if not isinstance(logits, Tensor) else logits.shape,
                "f64" if wide else "f32")
    gumbel = -nn.log(-nn.log(u))
    return nn.argmax(logits + gumbel, axis=axis)
