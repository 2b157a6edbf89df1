"""rlx -> rlx passes (xDSL ``ModulePass``), registered by name for ``rlx-opt -p``.

A pass module registers its pass with :func:`register_pass`; importing this
package imports every pass module listed in ``_PASS_MODULES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from xdsl.passes import ModulePass
from xdsl.transforms import get_all_passes

PASSES: dict[str, Callable[[], type[ModulePass]]] = {}

_UPSTREAM = ("canonicalize", "cse", "dce")
_PASS_MODULES = (
    "rlx_mlir.transforms.autodiff",
    "rlx_mlir.transforms.jvp",
    "rlx_mlir.transforms.vmap",
    "rlx_mlir.lowering",
)


def register_pass(cls: type[ModulePass]) -> type[ModulePass]:
    """Class decorator making a pass available to ``rlx-opt`` by its ``name``."""
    PASSES[cls.name] = lambda: cls
    return cls


def all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    upstream = get_all_passes()
    table = {name: upstream[name] for name in _UPSTREAM}
    for module in _PASS_MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
    table.update(PASSES)
    return table
