"""Linear algebra for traced code, under JAX's names (``jnp.linalg``).

>>> x = rlx.linalg.solve(a, b)        # a @ x = b              # doctest: +SKIP
>>> n = rlx.linalg.norm(g)            # the 2-norm              # doctest: +SKIP
"""

from rlx_mlir.frontend.array_ops import linalg_norm as _norm
from rlx_mlir.nn import _eager, _half_in_f32, solve

norm = _eager(_half_in_f32(_norm))

__all__ = ["norm", "solve"]
