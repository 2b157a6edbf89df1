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

Called outside a trace (no traced key), each function runs at once and returns numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rlx_mlir.builder import Tensor, _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.dialects.base import FLOAT_DTYPES, tensor
from rlx_mlir.nn import _eager

_KEY_BITS = 2.0**31


def _key(key: Any) -> Tensor:
    """A key as the 0-d i32 the ops take (i64 keys keep their low 32 bits); a Python or
    numpy integer inside a trace becomes a constant of the innermost trace."""
    from rlx_mlir.frontend.tracing import _active

    if isinstance(key, (int, np.integer)) and not isinstance(key, bool) and _active():
        key = _active()[-1].constant(np.int64(key).astype(np.int32))
    if not isinstance(key, Tensor) or key.shape != () or key.dtype not in ("i32", "i64"):
        what = f"{key.dtype}{list(key.shape)}" if isinstance(key, Tensor) else type(key).__name__
        raise RlxError(f"a random key must be an integer scalar (a Python int, np.int32, or a "
                       f"0-d integer tensor, e.g. an element of rlx.random.split); got {what}",
                       loc=loc_from_attr(_user_location()))
    return key.astype("i32")


def _sample(op: str, key: Any, shape: Sequence[int] | int, dtype: str) -> Tensor:
    from rlx_mlir.builder import _dtype_name

    name = _dtype_name(dtype)
    if name not in FLOAT_DTYPES:
        raise RlxError(f"random samples are f32 or f64; got {dtype!r}",
                       loc=loc_from_attr(_user_location()))
    k = _key(key)
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return k.builder.emit(op, k, out=[tensor(tuple(int(d) for d in dims), name)])  # type: ignore[return-value]


@_eager
def uniform(key: Any, shape: Sequence[int] | int = (), dtype: Any = "f32",
            minval: float = 0.0, maxval: float = 1.0) -> Tensor:
    """Uniform samples in ``[minval, maxval)`` (``jax.random.uniform``).

    >>> rlx.random.uniform(0, (2, 3))                       # doctest: +SKIP
    """
    u = _sample("rng_uniform", key, shape, dtype)
    return u if (minval, maxval) == (0.0, 1.0) else u * (maxval - minval) + minval


@_eager
def normal(key: Any, shape: Sequence[int] | int = (), dtype: Any = "f32") -> Tensor:
    """Standard normal samples (``jax.random.normal``)."""
    return _sample("rng_normal", key, shape, dtype)


@_eager
def bernoulli(key: Any, p: float = 0.5, shape: Sequence[int] | int = ()) -> Tensor:
    """Booleans, true with probability ``p`` (``jax.random.bernoulli``)."""
    return _sample("rng_uniform", key, shape, "f32") < p


@_eager
def split(key: Any, num: int = 2) -> tuple[Tensor, ...]:
    """A tuple of ``num`` new keys (0-d i32) derived from ``key``, as
    ``jax.random.split`` (``k1, k2 = rlx.random.split(key)``)."""
    bits = (_sample("rng_uniform", key, (num,), "f64") * _KEY_BITS).astype("i32")
    return tuple(bits[i] for i in range(num))
