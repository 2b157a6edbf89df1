"""Python dialect modules the MLIR bindings load instead of ``mlir.dialects.<name>``.

When Python first touches an op of a dialect, the bindings import that dialect's module
from the first package of ``dialect_search_modules`` that has it. ``mlir.dialects.linalg``
also builds the opdsl table of every named op (about 40 ms of every process's first
compile); :mod:`.linalg` here registers only the generated op classes. ``mlir.dialects.llvm``
imports the classes of every LLVM op and intrinsic (about 75 ms); :mod:`.llvm` here
registers none. Other dialects fall through to ``mlir.dialects``; a user's own
``from mlir.dialects import linalg`` still imports the full module (and registers its
op classes).
"""

from __future__ import annotations

import functools


@functools.cache
def use_light_dialects() -> None:
    """Put this package first in the bindings' dialect search path (once per process).

    Example: ``use_light_dialects()`` then ``ir.Module.parse(...)``."""
    from mlir._mlir_libs import _mlir

    search = list(_mlir.globals.dialect_search_modules)
    if __name__ not in search:
        _mlir.globals.dialect_search_modules = [__name__, *search]
