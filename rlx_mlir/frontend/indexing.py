"""``tensor[index]`` while tracing: integers and unit-step slices become ``rlx.narrow``
(plus a reshape dropping integer axes), ``None`` inserts an axis, an integer Tensor on
the leading axis becomes ``rlx.gather``.

>>> # x[2], x[:, 1:3], x[..., 0], x[None], embed[tokens]
"""

from __future__ import annotations

from typing import Any

from rlx_mlir.diagnostics import RlxError


def _expand_ellipsis(index: tuple, rank: int) -> tuple:
    if Ellipsis not in index:
        return index
    at = index.index(Ellipsis)
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    return index[:at] + (slice(None),) * (rank - used) + index[at + 1:]


def getitem(x: Any, index: Any) -> Any:
    from rlx_mlir.builder import Tensor, _user_location
    from rlx_mlir.diagnostics import loc_from_attr

    b = x.builder
    if isinstance(index, Tensor):
        return b.gather(x, index, axis=0)
    index = _expand_ellipsis(index if isinstance(index, tuple) else (index,), x.ndim)
    shape: list[int] = []
    axis = 0
    for item in index:
        if item is None:
            shape.append(1)
            continue
        if axis >= x.ndim:
            raise RlxError(f"too many indices for a tensor of rank {x.ndim}",
                           loc=loc_from_attr(_user_location()))
        extent = x.shape[axis]
        if isinstance(item, int):
            start = item + extent if item < 0 else item
            if not 0 <= start < extent:
                raise RlxError(f"index {item} is out of range for axis {axis} of size {extent}",
                               loc=loc_from_attr(_user_location()))
            x = b.narrow(x, axis=axis, start=start, length=1)
        elif isinstance(item, slice):
            start, stop, step = item.indices(extent)
            if step != 1:
                raise RlxError("only unit-step slices are supported while tracing",
                               loc=loc_from_attr(_user_location()))
            if stop - start != extent:
                x = b.narrow(x, axis=axis, start=start, length=max(stop - start, 0))
            shape.append(x.shape[axis])
        else:
            raise RlxError(f"unsupported index {item!r} while tracing",
                           loc=loc_from_attr(_user_location()))
        axis += 1
    shape.extend(x.shape[axis:])
    return x if tuple(shape) == x.shape else b.reshape(x, shape)
