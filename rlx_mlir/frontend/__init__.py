"""The tracing front end: ``jit``, ``grad``, ``value_and_grad``, ``vmap``, ``jvp``."""

from rlx_mlir.frontend.tracing import Traced, grad, jit, jvp, trace, value_and_grad, vmap

__all__ = ["Traced", "grad", "jit", "jvp", "trace", "value_and_grad", "vmap"]
