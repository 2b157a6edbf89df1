"""numpy's array helpers on traced tensors, re-exported by ``rlx.nn`` (``linalg_norm`` as
``rlx.linalg.norm``): shape manipulation, masks, gathers along an axis and ``*_like``
constructors, each written with the existing ops (reshape, expand, narrow, where,
gather), so every transformation applies.

>>> causal = rlx.nn.tril(scores, k=0)                       # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from rlx_mlir.builder import Tensor, _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr


def _error(message: str) -> RlxError:
    return RlxError(message, loc=loc_from_attr(_user_location()))


def _tensor(x: object, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise _error(f"{what}: expected a traced tensor, got {type(x).__name__}")
    return x


def _int(value: object, what: str) -> int:
    if isinstance(value, (np.ndarray, np.generic)) and np.shape(value) == () and \
            np.asarray(value).dtype.kind in "iu":
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise _error(f"{what} must be an int, got {value!r}")
    return int(value)


def _axis(axis: object, rank: int, what: str) -> int:
    axis = _int(axis, f"{what}: axis")
    if not -rank <= axis < rank:
        raise _error(f"{what}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def _shape(shape: object, what: str) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(np.asarray(shape).ravel())
    return tuple(_int(d, f"{what}: a dim") for d in dims)


def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    """``x`` broadcast to ``shape`` by numpy's rules (``np.broadcast_to``).

    >>> rlx.nn.broadcast_to(bias, (8, 16))                     # doctest: +SKIP
    """
    x, target = _tensor(x, "broadcast_to"), _shape(shape, "broadcast_to")
    padded = (1,) * (len(target) - x.ndim) + tuple(x.shape)
    if len(target) < x.ndim or any(d not in (1, t) for d, t in zip(padded, target, strict=True)):
        raise _error(f"broadcast_to: cannot broadcast {list(x.shape)} to {list(target)}")
    if padded == target:
        return x.reshape(target)
    return x.builder.expand(x.reshape(padded), target)


def expand_dims(x: Tensor, axis: int | Sequence[int]) -> Tensor:
    """``x`` with size-1 axes inserted at ``axis`` (positions in the result)."""
    x = _tensor(x, "expand_dims")
    if isinstance(axis, (int, np.integer, np.ndarray)) and np.ndim(axis) == 0:
        axes = [axis]
    elif isinstance(axis, (list, tuple)):
        axes = list(axis)
    else:
        raise _error(f"expand_dims: axis must be an int or a sequence of ints, got {axis!r}")
    rank = x.ndim + len(axes)
    positions = sorted(_axis(a, rank, "expand_dims") for a in axes)
    if len(set(positions)) != len(positions):
        raise _error(f"expand_dims: repeated axis in {axis!r}")
    shape = list(x.shape)
    for p in positions:
        shape.insert(p, 1)
    return x.reshape(tuple(shape))


def split(x: Tensor, indices_or_sections: int | Sequence[int], axis: int = 0) -> list[Tensor]:
    """numpy's ``split``: ``sections`` equal parts, or parts cut at the given indices."""
    x = _tensor(x, "split")
    axis = _axis(axis, x.ndim, "split")
    extent = x.shape[axis]
    if np.ndim(indices_or_sections) == 0:
        sections = _int(indices_or_sections, "split: sections")
        if sections <= 0 or extent % sections:
            raise _error(f"split: {extent} elements along axis {axis} do not split into "
                         f"{sections} equal sections")
        cuts = [extent // sections * i for i in range(1, sections)]
    else:
        cuts = [_int(c, "split: an index") for c in indices_or_sections]
        cuts = [min(max(c + extent if c < 0 else c, 0), extent) for c in cuts]  # as slicing
    bounds = [0, *cuts, extent]
    for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False)):
        if hi <= lo:
            raise _error(f"split: part {i} ([{lo}:{hi}] of axis {axis}) is empty; rlx "
                         "tensors have no zero-size dims")
    return [x.builder.narrow(x, axis=axis, start=lo, length=hi - lo)
            for lo, hi in zip(bounds, bounds[1:], strict=False)]


def repeat(x: Tensor, repeats: int, axis: int | None = None) -> Tensor:
    """numpy's ``repeat`` with an int count: each element ``repeats`` times along
    ``axis`` (of the flattened tensor when None)."""
    x = _tensor(x, "repeat")
    count = _int(repeats, "repeat: repeats")
    if count < 0:
        raise _error(f"repeat: repeats must be >= 0, got {count}")
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = _axis(axis, x.ndim, "repeat")
    shape = list(x.shape)
    spread = x.reshape((*shape[:axis + 1], 1, *shape[axis + 1:]))
    target = (*shape[:axis + 1], count, *shape[axis + 1:])
    shape[axis] *= count
    return x.builder.expand(spread, target).reshape(tuple(shape))


def tile(x: Tensor, reps: int | Sequence[int]) -> Tensor:
    """numpy's ``tile``: ``x`` repeated ``reps[i]`` times along each axis."""
    x = _tensor(x, "tile")
    reps = _shape(reps, "tile")
    rank = max(x.ndim, len(reps))
    shape = (1,) * (rank - x.ndim) + tuple(x.shape)
    reps = (1,) * (rank - len(reps)) + reps
    if any(r < 0 for r in reps):
        raise _error(f"tile: reps must be >= 0, got {list(reps)}")
    interleaved = tuple(d for s in shape for d in (1, s))
    target = tuple(d for r, s in zip(reps, shape, strict=True) for d in (r, s))
    grown = x.builder.expand(x.reshape(interleaved), target)
    return grown.reshape(tuple(r * s for r, s in zip(reps, shape, strict=True)))


def _triangle(x: Tensor, k: int, lower: bool, what: str) -> Tensor:
    from rlx_mlir.nn import where

    x = _tensor(x, what)
    if x.ndim < 2:
        raise _error(f"{what}: expected a tensor of rank >= 2, got {list(x.shape)}")
    k = _int(k, f"{what}: k")
    rows, cols = x.shape[-2:]
    keep = np.tri(rows, cols, k, dtype=bool) if lower else ~np.tri(rows, cols, k - 1, dtype=bool)
    return where(keep, x, False if x.dtype == "i1" else 0)


def tril(x: Tensor, k: int = 0) -> Tensor:
    """``x`` with the elements above the ``k``-th diagonal zeroed (``np.tril``)."""
    return _triangle(x, k, True, "tril")


def triu(x: Tensor, k: int = 0) -> Tensor:
    """``x`` with the elements below the ``k``-th diagonal zeroed (``np.triu``)."""
    return _triangle(x, k, False, "triu")


def take_along_axis(x: Tensor, indices: Tensor, axis: int) -> Tensor:
    """numpy's ``take_along_axis``: ``out[..., j, ...] = x[..., indices[..., j, ...],
    ...]`` along ``axis``, the other axes broadcasting; negative indices count from the
    end, others out of range are clamped (as ``rlx.nn.embedding``).

    >>> rlx.nn.take_along_axis(logits, labels[:, None], axis=1)  # doctest: +SKIP
    """
    from rlx_mlir.frontend.indexing import wrap_negative
    from rlx_mlir.nn import _integer_indices

    x = _tensor(x, "take_along_axis")
    axis = _axis(axis, x.ndim, "take_along_axis")
    indices = _integer_indices(x.builder, indices, "take_along_axis: indices")
    if indices.ndim != x.ndim:
        raise _error(f"take_along_axis: indices must have x's rank {x.ndim}, got "
                     f"{list(indices.shape)}")
    lead = [max(a, b) for i, (a, b) in enumerate(zip(x.shape, indices.shape, strict=True))
            if i != axis]
    for i, (a, b) in enumerate(zip(x.shape, indices.shape, strict=True)):
        if i != axis and 1 not in (a, b) and a != b:
            raise _error(f"take_along_axis: indices {list(indices.shape)} do not broadcast "
                         f"against x {list(x.shape)} outside axis {axis}")
    moved = list(range(x.ndim))
    moved.append(moved.pop(axis))
    table = broadcast_to(x.transpose(tuple(moved)), (*lead, x.shape[axis]))
    picks = broadcast_to(indices.transpose(tuple(moved)), (*lead, indices.shape[axis]))
    extent, count = x.shape[axis], indices.shape[axis]
    clamped = _clamp(wrap_negative(picks, extent), extent)
    rows = math.prod(lead)
    offsets = x.builder.constant((np.arange(rows, dtype=np.int64) * extent).reshape(
        (*lead, 1)) if lead else np.zeros((1,), np.int64))
    flat = (clamped.astype("i64") + offsets).reshape(-1)
    taken = x.builder.gather(table.reshape(-1), flat, axis=0).reshape((*lead, count))
    inverse = [moved.index(i) for i in range(x.ndim)]
    return taken.transpose(tuple(inverse))


def _clamp(positions: Tensor, extent: int) -> Tensor:
    from rlx_mlir.nn import maximum, minimum

    return minimum(maximum(positions, 0), extent - 1)


def outer(a: Tensor, b: Tensor) -> Tensor:
    """``a.ravel()[:, None] * b.ravel()[None, :]`` (``np.outer``; numpy arrays and lists
    promote as operands of ``*`` do)."""
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise _error("outer: expected a traced tensor among the arguments")
    column = a.reshape((-1, 1)) if isinstance(a, Tensor) else np.reshape(np.asarray(a), (-1, 1))
    row = b.reshape((1, -1)) if isinstance(b, Tensor) else np.reshape(np.asarray(b), (1, -1))
    return column * row


def square(x: Tensor) -> Tensor:
    """``x * x``."""
    return x * x


def full_like(x: Tensor, fill_value: float, dtype: object = None) -> Tensor:
    """A constant of ``x``'s shape (and dtype, unless ``dtype``: an rlx or numpy name)."""
    from rlx_mlir.builder import _dtype_name
    from rlx_mlir.dialects.base import COMPLEX_DTYPES, NUMPY_DTYPES

    x = _tensor(x, "full_like")
    target = x.dtype if dtype is None else _dtype_name(dtype)
    value = np.asarray(fill_value)
    if value.ndim or value.dtype.kind not in "biufc":
        raise _error(f"full_like: fill_value must be a number, got {fill_value!r}"[:200])
    if value.dtype.kind == "c" and target not in COMPLEX_DTYPES and value.imag != 0:
        raise _error(f"full_like: a complex fill_value for a {target} tensor")
    kind = np.dtype(NUMPY_DTYPES[target]).kind
    if kind in "iu" and not np.iinfo(NUMPY_DTYPES[target]).min <= value.real <= \
            np.iinfo(NUMPY_DTYPES[target]).max:
        raise _error(f"full_like: {fill_value!r} does not fit {target}")
    number = value.item() if kind == "c" else value.real.item()
    return x.builder.full(tuple(x.shape), number, target)


def zeros_like(x: Tensor, dtype: str | None = None) -> Tensor:
    """Zeros of ``x``'s shape and dtype."""
    return full_like(x, 0, dtype)


def ones_like(x: Tensor, dtype: str | None = None) -> Tensor:
    """Ones of ``x``'s shape and dtype."""
    return full_like(x, 1, dtype)


def linalg_norm(x: Tensor, ord: object = None, axis: int | Sequence[int] | None = None,
                keepdims: bool = False) -> Tensor:
    """``np.linalg.norm`` for the 2-norm: of a vector, the Frobenius norm of a matrix, or
    over ``axis``; ``ord`` None, 2 (vectors) or ``"fro"``. Its gradient at zero is zero,
    as JAX's is not (NaN): ``sqrt`` is guarded.

    >>> rlx.linalg.norm(g)                                     # doctest: +SKIP
    """
    from rlx_mlir.nn import where

    x = _tensor(x, "linalg.norm")
    if axis is None:
        axes = tuple(range(x.ndim))
    elif np.ndim(axis) == 0:
        axes = (_axis(axis, x.ndim, "linalg.norm"),)
    elif isinstance(axis, (list, tuple)):
        axes = tuple(_axis(a, x.ndim, "linalg.norm") for a in axis)
    else:
        raise _error(f"linalg.norm: axis must be an int or a tuple of ints, got {axis!r}")
    vector = len(axes) == 1
    known = ord is None or (isinstance(ord, (int, np.integer)) and ord == 2 and vector) or \
        (isinstance(ord, str) and ord == "fro" and not vector)
    if not known:
        raise _error(f"linalg.norm: ord={ord!r} is not supported (None, 2 for vectors, "
                     "'fro' for matrices)")
    if x.dtype in ("i1", "i8", "i32", "i64"):
        x = x.astype("f32")  # squares of integers would wrap (numpy's norm is a float)
    magnitude = x.real * x.real + x.imag * x.imag if x.dtype in ("c64", "c128") else x * x
    total = magnitude.sum(axis=axes, keepdims=keepdims)
    zero = total == 0  # sqrt's gradient is guarded there; NaN stays NaN
    return where(zero, 0.0, where(zero, 1.0, total) ** 0.5)
