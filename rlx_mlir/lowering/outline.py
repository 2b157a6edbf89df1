"""Outline each top-level kernel of a bufferized function into a private function
(upstream bindings, fast pipeline).

After bufferization a training step is one function: its allocations, views and, between
them, one loop nest (or structured op) per kernel. Compiled as one function, every later
pass and LLVM sees one huge body: nested passes cannot use a second core, the parallel
LLVM jobs cannot split it, and a model's repeated layers are compiled once per layer.
:func:`outline_kernels` moves every top-level op with a region into its own
``<function>_kernel_<i>`` (memrefs and other values from outside become arguments;
constants are cloned in, so loop bounds stay static) and calls it; the dedupe stage then
merges the kernels that are the same (the char-LM demo's two layers and their gradients).

Example (the stage list of :mod:`rlx_mlir.lowering.upstream`)::

    Stage("outline", "python:outline-kernels", outline_kernels)
"""

from __future__ import annotations

from typing import Any

from rlx_mlir.lowering.dedupe import symbol_name

KERNEL_DIALECTS = ("scf.", "linalg.")
"""Top-level ops of these dialects that hold a region are kernels."""

CLONED = frozenset({"arith.constant", "ub.poison"})
"""Ops a kernel gets its own copy of instead of an argument."""


def _is_kernel(op: Any) -> bool:
    name = op.operation.name  # an OpView's ``name`` may be an attribute (memref.get_global)
    return name.startswith(KERNEL_DIALECTS) and len(op.regions) > 0


def _captured(op: Any) -> tuple[list[Any], list[tuple[Any, int, Any]]]:
    """Values ``op`` (or an op nested in it) uses but does not define, in first-use order,
    and each such use as (user, operand index, value)."""
    from mlir import ir

    defined: set[Any] = set()
    captured: dict[Any, None] = {}
    uses: list[tuple[Any, int, Any]] = []

    def visit(nested: Any) -> Any:
        for region in nested.regions:
            for block in region.blocks:
                defined.update(block.arguments)
        for index, value in enumerate(nested.operands):
            if value not in defined:
                captured.setdefault(value, None)
                uses.append((nested, index, value))
        defined.update(nested.results)
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return list(captured), uses


def _outline(op: Any, name: str, module: Any) -> None:
    from mlir import ir
    from mlir.dialects import func

    captured, uses = _captured(op)
    passed = [v for v in captured if not _is_constant(v)]
    with ir.InsertionPoint(op):
        call = func.CallOp([r.type for r in op.results], name, passed)
    for result, replacement in zip(op.results, call.results, strict=True):
        result.replace_all_uses_with(replacement)
    with ir.InsertionPoint(module.body):
        kernel = func.FuncOp(name, ([v.type for v in passed], [r.type for r in op.results]),
                             visibility="private")
    block = kernel.add_entry_block()
    mapping = dict(zip(passed, block.arguments, strict=True))
    with ir.InsertionPoint(block):
        for value in captured:
            if value not in mapping:
                mapping[value] = value.owner.clone().results[0]
    block.append(op)
    with ir.InsertionPoint(block):
        func.ReturnOp(list(op.results))
    for user, index, value in uses:  # point the kernel's ops at its arguments and clones
        user.operands[index] = mapping[value]


def _is_constant(value: Any) -> bool:
    from mlir import ir

    return isinstance(value, ir.OpResult) and value.owner.operation.name in CLONED


def outline_kernels(module: Any) -> int:
    """Move every top-level kernel of each function with a body into a private function
    called from where it was; returns how many."""
    taken = {symbol_name(op) for op in module.body.operations if "sym_name" in op.attributes}
    functions = [op for op in module.body.operations
                 if op.operation.name == "func.func" and op.regions[0].blocks]
    count = 0
    for function in functions:
        for op in list(function.regions[0].blocks[0].operations):
            if _is_kernel(op):
                name = _fresh(f"{symbol_name(function)}_kernel_", taken)
                with op.location:
                    _outline(op, name, module)
                count += 1
    return count


def _fresh(prefix: str, taken: set[str]) -> str:
    """``prefix<i>`` for the first ``i`` not in ``taken`` (then taken)."""
    index = 0
    while f"{prefix}{index}" in taken:
        index += 1
    taken.add(f"{prefix}{index}")
    return f"{prefix}{index}"
