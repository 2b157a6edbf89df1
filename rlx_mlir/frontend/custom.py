"""``custom_vjp``: a function with a user-defined reverse-mode derivative, JAX's API on
``rlx.custom_fn``.

>>> @rlx.custom_vjp
... def clip_gradient(x):
...     return x
>>> clip_gradient.defvjp(lambda x: (x, None),
...                      lambda res, g: (rlx.nn.clip(g, -1.0, 1.0),))

``rlx.custom_fn`` has no residuals: its VJP region sees the primals, the output and the
cotangent. ``fwd`` therefore runs again inside the VJP region to rebuild the residuals
``bwd`` needs (the same values, recomputed), and only the primal ``fun`` runs forward.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from rlx_mlir.builder import Tensor, _user_location, innermost
from rlx_mlir.diagnostics import RlxError, loc_from_attr


class custom_vjp:  # noqa: N801 (JAX's name)
    """``fun(*tensors) -> tensor`` whose gradient is ``bwd(residuals, g)`` after
    :meth:`defvjp`; ``fwd(*tensors) -> (output, residuals)``. Arguments and the output
    are single tensors (numpy arrays become constants of the first tensor's dtype);
    ``bwd`` returns a tuple with one gradient (or None: zero) per argument. Forward mode
    (``jvp``) differentiates ``fun`` itself."""

    def __init__(self, fun: Callable[..., Any]):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.fwd: Callable[..., Any] | None = None
        self.bwd: Callable[..., Any] | None = None
        self._in_rule = 0  # > 0 while fwd/bwd are traced: a call there is the primal

    def defvjp(self, fwd: Callable[..., Any], bwd: Callable[..., Any]) -> None:
        """Set the forward (output and residuals) and backward rules, as JAX's."""
        self.fwd, self.bwd = fwd, bwd

    def __call__(self, *args: Any) -> Any:
        tensors = [a for a in args if isinstance(a, Tensor)]
        if not tensors or self._in_rule:
            return self.fun(*args)  # outside a trace, or fwd calling fun: the primal
        if self.fwd is None or self.bwd is None:
            raise _error(f"custom_vjp {self.__name__}: call defvjp(fwd, bwd) before using it")
        from rlx_mlir.frontend.tracing import _as_array

        b = innermost(*tensors)  # numbers and arrays keep their own dtype, as jit arguments
        primals = [a if isinstance(a, Tensor) else b.constant(_as_array(a)) for a in args]
        return innermost(*primals).custom_fn(
            primals, lambda b, *xs: self._output(self.fun(*xs)), vjp=self._vjp_region)

    def _vjp_region(self, b: Any, *values: Tensor) -> list[Tensor]:
        *primals, _, g = values
        self._in_rule += 1
        try:
            forward = self.fwd(*primals)  # type: ignore[misc]
            if not (isinstance(forward, tuple) and len(forward) == 2):
                raise _error(f"custom_vjp {self.__name__}: fwd must return (output, "
                             "residuals)")
            grads = self.bwd(forward[1], g)  # type: ignore[misc]
        finally:
            self._in_rule -= 1
        if not isinstance(grads, (tuple, list)) or len(grads) != len(primals):
            raise _error(f"custom_vjp {self.__name__}: bwd must return a tuple of "
                         f"{len(primals)} gradient(s), one per argument; got {grads!r}"[:300])
        return [_gradient(grad, x, i, self.__name__) for i, (grad, x)
                in enumerate(zip(grads, primals, strict=True))]

    def _output(self, out: Any) -> Tensor:
        if not isinstance(out, Tensor):
            raise _error(f"custom_vjp {self.__name__}: the function must return one tensor; "
                         f"got {type(out).__name__}")
        return out


def _gradient(grad: Any, x: Tensor, i: int, name: str) -> Tensor:
    """``grad`` as a tensor of ``x``'s type (None: zeros; a number or array: a constant)."""
    if grad is None:  # zeros of x's type (an integer key's too; x * 0.0 made it f32)
        return x.builder.full(x.shape, 0, x.dtype)
    grad = grad if isinstance(grad, Tensor) else x._lift(np.asarray(grad))
    if grad.shape != x.shape or grad.dtype != x.dtype:
        raise _error(f"custom_vjp {name}: gradient {i} has shape {grad.shape} and dtype "
                     f"{grad.dtype}; its argument has {x.shape} and {x.dtype}")
    return grad


def _error(message: str) -> RlxError:
    return RlxError(message, loc=loc_from_attr(_user_location()))
