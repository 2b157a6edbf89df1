"""``tensor[index]`` while tracing: integers and unit-step slices become ``rlx.narrow``
(plus a reshape dropping integer axes), other slices and integer arrays or traced integer
tensors an ``rlx.gather`` along their axis (a traced scalar drops the axis, as an int),
and ``None`` inserts an axis.

>>> # x[2], x[:, 1:3], x[..., 0], x[None], embed[tokens], x[:, i], x[::2], x[:, idx]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rlx_mlir.diagnostics import RlxError


def _error(message: str) -> RlxError:
    """An indexing error located at the user's line."""
    from rlx_mlir.builder import _user_location
    from rlx_mlir.diagnostics import loc_from_attr

    return RlxError(message, loc=loc_from_attr(_user_location()))


def _expand_ellipsis(index: tuple, rank: int) -> tuple:
    ats = [k for k, i in enumerate(index) if i is Ellipsis]
    if not ats:
        return index
    if len(ats) > 1:
        raise _error("an index can only have a single ellipsis ('...')")
    at = ats[0]
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    return index[:at] + (slice(None),) * (rank - used) + index[at + 1:]


def _scalar_item(item: Any) -> Any:
    """One entry of a basic index, numpy integers as ``int``; arrays, lists and bools
    are rejected (they would select or mask rather than pick one position)."""
    from rlx_mlir.builder import Tensor

    if isinstance(item, (bool, np.bool_)):
        raise _error(f"boolean index {item!r} is not supported while tracing; "
                     "use rlx.nn.where to mask")
    if isinstance(item, np.integer) or (isinstance(item, np.ndarray) and item.ndim == 0
                                        and np.issubdtype(item.dtype, np.integer)):
        return int(item)
    if isinstance(item, list):
        raise _error("a list inside an index is not supported (as in JAX); use a numpy "
                     "array")
    if isinstance(item, Tensor) and item.dtype == "i8":
        return item.astype("i32")  # x[i8] works, so does x[:, i8]
    if isinstance(item, Tensor) and item.dtype not in ("i32", "i64"):
        raise _error(f"a traced index must be an integer tensor, got {item.dtype}")
    return item


def _row_indices(index: np.ndarray, extent: int, axis: int = 0) -> np.ndarray:
    """A numpy integer index array for ``axis`` of size ``extent``, checked and made
    non-negative (i32, as ``rlx.gather`` takes it)."""
    if index.dtype == np.bool_:
        raise _error("boolean-mask indexing is not supported while tracing (the result "
                     "shape would depend on the data); use rlx.nn.where to mask")
    if not np.issubdtype(index.dtype, np.integer):
        raise _error(f"index arrays must have an integer dtype, got {index.dtype}")
    bad = index[(index < -extent) | (index >= extent)]
    if bad.size:
        raise _error(f"index {bad.flat[0]} is out of range for axis {axis} of size {extent}")
    return np.where(index < 0, index + extent, index).astype(np.int32)


def _gather_rows(x: Any, index: Any) -> Any:
    """``x[index]`` for an integer Tensor or integer numpy array ``index`` (axis 0)."""
    from rlx_mlir.builder import innermost

    if x.ndim == 0:
        raise _error("cannot index a 0-d tensor")
    index = _index_tensor(x, 0, index)
    return innermost(x, index).gather(x, index, axis=0)


def _index_tensor(x: Any, axis: int, index: Any) -> Any:
    """An integer Tensor (negative entries counted from the end, out-of-range ones then
    clamped by gather, as JAX) or numpy array (checked) as indices into ``axis`` of ``x``."""
    from rlx_mlir.builder import Tensor

    extent = x.shape[axis]
    if isinstance(index, Tensor):
        return wrap_negative(index, extent)
    return x.builder.constant(_row_indices(np.asarray(index), extent, axis))


def _taken(x: Any, axis: int, index: Any) -> Any:
    """``np.take(x, index, axis)`` (:func:`_index_tensor`); a 0-d index keeps the axis
    as one row, which the caller drops."""
    from rlx_mlir.builder import innermost

    index = _index_tensor(x, axis, index)
    if index.ndim == 0:
        return innermost(x, index).gather(x, index.reshape(1), axis=axis)
    return innermost(x, index).gather(x, index, axis=axis)


def _check_array_items(index: tuple) -> None:
    """One index array at most (of rank >= 1), and not apart from the ints: numpy then
    moves its axes to the front, which rlx does not do."""
    arrays = [k for k, i in enumerate(index) if _is_array(i) and np.ndim(_value(i)) > 0]
    if len(arrays) > 1:
        raise _error("only one index array (or traced index vector) per index is supported")
    if arrays:
        scalars = [k for k, i in enumerate(index) if isinstance(i, int) or (
            _is_array(i) and np.ndim(_value(i)) == 0)]
        at = arrays[0]
        between = index[min([at, *scalars]):max([at, *scalars]) + 1]
        if any(isinstance(i, slice) or i is None for i in between):
            raise _error("an index array apart from other integer indices (numpy moves "
                         "their axes to the front) is not supported; index in two steps")


def _is_array(item: Any) -> bool:
    from rlx_mlir.builder import Tensor

    return isinstance(item, (Tensor, np.ndarray))


def _value(item: Any) -> Any:
    from rlx_mlir.builder import Tensor

    return np.empty(item.shape) if isinstance(item, Tensor) else item


def wrap_negative(index: Any, extent: int) -> Any:
    """A traced integer index with negative entries counted from the end (numpy, JAX):
    ``where(i < 0, i + extent, i)``; out-of-range entries are then clamped by gather."""
    b = index.builder
    return b.where(index < 0, index + extent, index)


def _sliced(x: Any, axis: int, item: slice) -> Any:
    """``x`` sliced by ``item`` along ``axis``: ``rlx.narrow`` for a unit step, else an
    ``rlx.gather`` of the positions (``x[::2]``, ``x[::-1]``). An empty slice is an error:
    rlx tensors have no zero-size dims."""
    extent = x.shape[axis]
    positions = range(*item.indices(extent))
    if not positions:
        raise _error(f"the slice {_slice_text(item)} of axis {axis} (size {extent}) is "
                     "empty; rlx tensors have no zero-size dims")
    if positions.step != 1:
        rows = x.builder.constant(np.asarray(positions, dtype=np.int32))
        return x.builder.gather(x, rows, axis=axis)
    if len(positions) == extent:
        return x
    return x.builder.narrow(x, axis=axis, start=positions.start, length=len(positions))


def _slice_text(item: slice) -> str:
    parts = ["" if v is None else str(v) for v in (item.start, item.stop, item.step)]
    return ":".join(parts if item.step is not None else parts[:2])


def getitem(x: Any, index: Any) -> Any:
    from rlx_mlir.builder import Tensor

    if isinstance(index, Tensor) or (isinstance(index, np.ndarray) and index.ndim > 0):
        return _gather_rows(x, index)
    if isinstance(index, list):
        raise _error("indexing with a list is not supported (as in JAX); use a numpy "
                     "array: x[np.array([...])]")
    items = tuple(_scalar_item(i) for i in (index if isinstance(index, tuple) else (index,)))
    index = _expand_ellipsis(items, x.ndim)
    _check_array_items(index)
    shape: list[int] = []
    axis = 0
    for item in index:
        if item is None:
            shape.append(1)
            continue
        if axis >= x.ndim:
            raise _error(f"too many indices for a tensor of rank {x.ndim}")
        extent = x.shape[axis]
        if isinstance(item, int):
            start = item + extent if item < 0 else item
            if not 0 <= start < extent:
                raise _error(f"index {item} is out of range for axis {axis} of size {extent}")
            x = x.builder.narrow(x, axis=axis, start=start, length=1)
        elif isinstance(item, slice):
            x = _sliced(x, axis, item)
            shape.append(x.shape[axis])
        elif _is_array(item):
            dims = np.shape(_value(item))
            x = _taken(x, axis, item)  # axis -> dims (a 0-d index: one row)
            if len(dims) > 1:  # one axis for them, as every other item leaves
                x = x.builder.reshape(x, (*x.shape[:axis], int(np.prod(dims)),
                                          *x.shape[axis + len(dims):]))
            shape.extend(dims)
        elif isinstance(item, str):
            raise _error(f"cannot index a {x.dtype}{list(x.shape)} tensor with the string "
                         f"{item!r}: a dict (or other pytree) was expected here -- are the "
                         "function's arguments passed in the right order?")
        else:
            raise _error(f"unsupported index {item!r} while tracing")
        axis += 1
    shape.extend(x.shape[axis:])
    return x if tuple(shape) == x.shape else x.builder.reshape(x, shape)
