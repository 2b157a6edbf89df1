"""Whole Jacobians and Hessians, JAX's ``jacfwd``, ``jacrev`` and ``hessian``, built from
``jvp`` / ``grad`` batched with ``vmap`` (one traced derivative for every basis vector).

>>> import numpy as np, rlx_mlir as rlx
>>> f = lambda x: rlx.nn.tanh(x) * x.sum()
>>> rlx.jacfwd(f)(np.ones(3)).shape, rlx.hessian(lambda x: (x ** 3).sum())(np.ones(2)).shape
((3, 3), (2, 2))

The differentiated arguments and the function's output are single float arrays (the
Jacobian of an ``[m...]`` output with respect to an ``[n...]`` argument is
``[m..., n...]``). Called outside a trace, the whole computation is compiled natively.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from rlx_mlir.builder import Tensor
from rlx_mlir.dialects.base import NUMPY_DTYPES
from rlx_mlir.frontend.tracing import (
    _active,
    _argnums,
    _check_callable,
    _error,
    _resolve_argnums,
    grad,
    jit,
    jvp,
    vmap,
)

__all__ = ["hessian", "jacfwd", "jacrev"]


def jacfwd(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The Jacobian of ``fn`` by forward mode: one ``jvp`` per element of the argument.

    >>> J = rlx.jacfwd(lambda x: x * x)(np.arange(3.0))        # doctest: +SKIP
    """
    return _jacobian(fn, argnums, "jacfwd", _forward_columns)


def jacrev(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The Jacobian of ``fn`` by reverse mode: one gradient per element of the output.

    >>> J = rlx.jacrev(lambda x: x * x)(np.arange(3.0))        # doctest: +SKIP
    """
    return _jacobian(fn, argnums, "jacrev", _reverse_rows)


def hessian(fn: Callable, argnums: int | Sequence[int] = 0) -> Callable:
    """The Hessian of a scalar ``fn``: ``jacfwd(jacrev(fn))`` (forward over reverse).

    >>> H = rlx.hessian(lambda x: (x ** 3).sum())(np.ones(2))   # doctest: +SKIP
    """
    _check_callable(fn, "hessian")
    return jacfwd(jacrev(fn, argnums), argnums)


Columns = Callable[[Callable[[Any], Any], Any, str], Any]


def _jacobian(fn: Callable, argnums: Any, caller: str, columns: Columns) -> Callable:
    _check_callable(fn, caller)
    nums = _argnums(argnums, caller)

    def jacobian(*args: Any) -> Any:
        if not _active():
            return jit(jacobian)(*args)
        picked = _resolve_argnums(nums, len(args), caller)
        found = [columns(_partial(fn, args, i), args[i], caller) for i in picked]
        return found[0] if isinstance(argnums, int) else tuple(found)

    jacobian.__name__ = f"{caller}_{getattr(fn, '__name__', 'fn')}"
    return jacobian


def _partial(fn: Callable, args: Sequence[Any], i: int) -> Callable[[Any], Any]:
    """``fn`` as a function of argument ``i`` alone (the others fixed)."""
    return lambda x: fn(*args[:i], x, *args[i + 1:])


def _float_array(value: Any, what: str, caller: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise _error(f"{caller}: {what} must be a single array (pytrees are not supported "
                     f"here); got {type(value).__name__}")
    if value.dtype not in ("f32", "f64"):
        raise _error(f"{caller}: {what} must be a float array; got {value.dtype}")
    return value


def _basis(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """``[n, *shape]``: the unit vectors of a ``shape`` array, one per element."""
    n = int(np.prod(shape))
    return np.eye(n, dtype=NUMPY_DTYPES[dtype]).reshape((n, *shape))


def _forward_columns(f: Callable[[Any], Any], x: Any, caller: str) -> Tensor:
    """``[*out, *x]``: the JVPs along every unit vector of ``x``, batched."""
    x = _float_array(x, "the differentiated argument", caller)
    out = _float_array(f(x), "the output", caller)
    columns = vmap(lambda t: jvp(f, (x,), (t,))[1])(_basis(x.shape, x.dtype))
    flat = columns.reshape((columns.shape[0], int(np.prod(out.shape))))
    return flat.T.reshape((*out.shape, *x.shape))


def _reverse_rows(f: Callable[[Any], Any], x: Any, caller: str) -> Tensor:
    """``[*out, *x]``: the gradients of every output element, batched."""
    x = _float_array(x, "the differentiated argument", caller)
    out = _float_array(f(x), "the output", caller)
    rows = vmap(lambda ct: grad(lambda xi: (f(xi) * ct).sum())(x))(_basis(out.shape, out.dtype))
    return rows.reshape((*out.shape, *x.shape))
