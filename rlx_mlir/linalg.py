"""Linear algebra for traced code, under JAX's names (``jnp.linalg``).

>>> x = rlx.linalg.solve(a, b)        # a @ x = b              # doctest: +SKIP
"""

from rlx_mlir.nn import solve

__all__ = ["solve"]
