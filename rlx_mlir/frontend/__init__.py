"""The tracing front end: ``jit``, ``grad``, ``value_and_grad``, ``vmap``, ``jvp``, the
Jacobians ``jacfwd``, ``jacrev``, ``hessian``, ``custom_vjp``, and structured control flow: ``scan``,
``cond``, ``while_loop``, ``fori_loop``."""

from rlx_mlir.frontend.control import cond, fori_loop, scan, while_loop
from rlx_mlir.frontend.custom import custom_vjp
from rlx_mlir.frontend.jacobians import hessian, jacfwd, jacrev, vjp
from rlx_mlir.frontend.tracing import Traced, grad, jit, jvp, trace, value_and_grad, vmap

__all__ = ["Traced", "cond", "custom_vjp", "fori_loop", "grad", "hessian", "jacfwd", "jacrev", "jit", "jvp",
           "scan", "trace", "value_and_grad", "vjp", "vmap", "while_loop"]
