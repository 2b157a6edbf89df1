"""``linalg`` for the bindings' op views: the generated op classes without the opdsl table."""

from mlir.dialects._linalg_ops_gen import *  # noqa: F403
