"""Merge structurally identical private functions (upstream bindings, fast pipeline).

``async-parallel-for`` outlines every parallel loop into its own
``parallel_compute_fn_<i>`` (and ``async-to-async-runtime`` each dispatch into an
``async_execute_fn_<i>``). A training step repeats shapes: the transformer-block gradient's
22 parallel bodies are 7 distinct functions (its four ``[2048, 256] x [256, 256]``
projections and their gradients share one matmul body). Every later pass, and LLVM, would
compile each copy again; :func:`merge_identical_functions` keeps one and points the calls
of the others at it (transformer gradient: 49 -> 19 LLVM functions, a quarter less IR).

Two functions are identical when they print the same apart from their own name (SSA names
are numbered per function, so equal bodies print equally).

Example (the stage list of :mod:`rlx_mlir.lowering.upstream`)::

    Stage("dedupe", "python:merge-identical-functions", merge_identical_functions)
"""

from __future__ import annotations

from typing import Any


def _private_functions(module: Any) -> list[Any]:
    """The module's private ``func.func`` definitions (declarations have no body)."""
    found = []
    for op in module.body.operations:
        if op.operation.name != "func.func" or not op.regions[0].blocks:
            continue
        visibility = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None
        if visibility is not None and str(visibility) == '"private"':
            found.append(op)
    return found


def symbol_name(op: Any) -> str:
    """The ``sym_name`` of a symbol op (a function), as a Python string."""
    from mlir import ir

    return ir.StringAttr(op.attributes["sym_name"]).value


def _shape_key(op: Any) -> str:
    """The function's text with its own name blanked (its structural identity)."""
    name = symbol_name(op)
    text = op.operation.get_asm(use_local_scope=True, assume_verified=True)
    return text.replace(f"@{name}(", "@(", 1)


def _duplicates(module: Any) -> dict[str, str]:
    """Erase each private function identical to an earlier one; {erased: kept} names.
    Only functions sharing a signature are printed and compared (printing is the cost)."""
    by_type: dict[str, list[Any]] = {}
    for op in _private_functions(module):
        by_type.setdefault(str(op.attributes["function_type"]), []).append(op)
    replaced: dict[str, str] = {}
    for group in by_type.values():
        kept: dict[str, str] = {}
        for op in group if len(group) > 1 else ():
            key, name = _shape_key(op), symbol_name(op)
            if key in kept:
                replaced[name] = kept[key]
                op.operation.erase()
            else:
                kept[key] = name
    return replaced


def _redirect_calls(module: Any, replaced: dict[str, str]) -> None:
    """Point every ``func.call`` of an erased function at its kept twin (the only way
    the pipeline refers to the outlined functions), in one walk of the module."""
    from mlir import ir

    def redirect(op: Any) -> Any:
        if op.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee in replaced:
                op.attributes["callee"] = ir.FlatSymbolRefAttr.get(replaced[callee])
        return ir.WalkResult.ADVANCE

    module.operation.walk(redirect)


def merge_identical_functions(module: Any) -> int:
    """Erase every private function identical to an earlier one, calling that one instead;
    repeated until none is left (merged bodies make their callers identical). Returns how
    many were erased."""
    total = 0
    while replaced := _duplicates(module):
        _redirect_calls(module, replaced)
        total += len(replaced)
    return total
