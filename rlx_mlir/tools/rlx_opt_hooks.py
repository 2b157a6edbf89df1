"""Stages of ``rlx-opt`` that are not xDSL passes (they print text, not a module).

A hook is ``fn(stage_spec, module, args) -> str | None``; a string becomes the
printed output (``--lower-to-llvm`` prints LLVM-dialect text, ``--check-grads``
a report), so such a stage must be the last one: ``TEXT_STAGES`` says why.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

STAGE_HOOKS: dict[str, Callable[[str, Any, Any], str | None]] = {}

# Stages whose output is text, not an rlx module: nothing can run after them.
TEXT_STAGES: dict[str, str] = {
    "lower-to-llvm": "the LLVM-dialect output is upstream MLIR text; run further passes "
                     "with mlir-opt",
    "check-grads": "--check-grads prints a report instead of the module; make it the last "
                   "stage",
}


def _view_graph_stage(stage_spec: str, module: Any, args: Any) -> str | None:
    """``--view-graph=out.svg``: draw the dataflow graph (``rlx_mlir.tools.view_graph``)."""
    from rlx_mlir.tools.view_graph import view_graph_stage

    return view_graph_stage(stage_spec, module, args)


STAGE_HOOKS["view-graph"] = _view_graph_stage
