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
HOOKS_WITH_OPTIONS = {"view-graph"}
"""Stage hooks that read options (``view-graph{out.svg func=f}``); the others reject any."""

# One line of ``rlx-opt --help`` per stage (passes and hooks), in the order listed.
STAGE_HELP: dict[str, str] = {
    "autodiff": "add @f_grad, the gradient of @f (options: func, wrt, zero-missing-wrt, "
                "grad-only)",
    "jvp": "add @f_jvp, the forward-mode derivative of @f (options: func, wrt)",
    "vmap": "add @f_vmap, @f batched over a new leading axis (options: func, batched, size)",
    "autodiff-report": "print how many carries (bytes) each backward scan stores (stderr)",
    "check-grads": "check gradient functions against finite differences; prints a report "
                   "(last stage)",
    "canonicalize": "xDSL's canonicalization patterns",
    "cse": "common-subexpression elimination",
    "dce": "dead-code elimination",
    "lower-to-linalg": "lower rlx to linalg/tensor/arith/math/scf on tensors",
    "print-after-all-upstream": "dump the IR after each upstream MLIR stage (before "
                                "--lower-to-llvm)",
    "lower-to-llvm": "lower to the LLVM dialect and print it as upstream MLIR text "
                     "(last stage)",
    "view-graph": "draw a function's dataflow graph: --view-graph=out.svg (or .png)",
}


def stage_help(names: list[str] | tuple[str, ...] | Any) -> str:
    """The ``--help`` listing of ``names``: ``  --name  description`` lines."""
    width = max(len(n) for n in names) + 4
    lines = []
    for name in sorted(names, key=lambda n: (list(STAGE_HELP).index(n)
                                              if n in STAGE_HELP else len(STAGE_HELP), n)):
        lines.append(f"  --{name:<{width}}{STAGE_HELP.get(name, name)}")
    return "\n".join(lines)
