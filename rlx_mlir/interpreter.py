"""The numpy reference interpreter: the oracle every compiled result is checked against.

>>> import numpy as np
>>> text = '''func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
...   %y = rlx.relu %x : (tensor<3xf32>) -> tensor<3xf32>
...   func.return %y : tensor<3xf32>
... }'''
>>> interpret(text, np.array([-1.0, 0.0, 2.0], np.float32))
(array([0., 0., 2.], dtype=float32),)
"""

from __future__ import annotations

import threading
from collections import ChainMap
from collections.abc import Sequence
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue

from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import numpy_dtype, shape_of
from rlx_mlir.ir import as_module, find_func
from rlx_mlir.rules import INTERPRET
from rlx_mlir.runtime.signature import Signature


def interpret(module_or_text: ModuleOp | str, *args: Any, entry: str | None = None,
              **kwargs: Any) -> tuple[np.ndarray, ...]:
    """Run ``entry`` (default: the first public function) on numpy arrays."""
    module = as_module(module_or_text)
    f = find_func(module, entry)
    arrays = Signature.of(f).bind(args, kwargs)
    return tuple(run_func(module, f, arrays))


def run_func(module: ModuleOp, f: func.FuncOp, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    caller = getattr(_SCOPE, "values", None)
    _SCOPE.values = None  # a function sees only its arguments
    try:
        return run_block(module, f.body.block, arrays)
    finally:
        _SCOPE.values = caller


_SCOPE = threading.local()
"""The values of the blocks being evaluated: a region of ``rlx.if`` / ``rlx.while`` /
``rlx.custom_fn`` may use values defined outside it (after CSE, say), as in MLIR."""


def run_block(module: ModuleOp | None, block: Block, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Evaluate a block on ``arrays``; returns the operands of its terminator. Values
    from enclosing blocks being evaluated are visible."""
    outer = getattr(_SCOPE, "values", None)
    env: ChainMap[SSAValue, np.ndarray] = ChainMap(dict(zip(block.args, arrays, strict=True)))
    if outer is not None:
        env.maps.append(outer)
    _SCOPE.values = env
    try:
        for op in block.ops:
            if op is block.last_op and not op.results and op.name != "func.call":
                return [env[v] for v in op.operands]
            results = run_op(module, op, [env[v] for v in op.operands])
            env.update(zip(op.results, results, strict=True))
        return []
    finally:
        _SCOPE.values = outer


def run_op(module: ModuleOp | None, op: Operation, args: list[np.ndarray]) -> list[np.ndarray]:
    """Evaluate one op with its registered interpreter rule."""
    if isinstance(op, func.CallOp):
        module = module if module is not None else _enclosing_module(op)
        callee = find_func(module, op.callee.root_reference.data)
        return run_func(module, callee, args)
    rule = INTERPRET.lookup(op)
    out = rule(op, *args)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    return [_conform(op, i, r) for i, r in enumerate(outs)]


def _enclosing_module(op: Operation) -> ModuleOp:
    """The module around ``op`` (a call in a region body that a rule evaluates, e.g. a
    ``rlx.scan`` body, is run without the module at hand)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        parent = parent.parent_op()
    if parent is None:
        raise RlxError(f"'func.call' of @{op.callee.root_reference.data} outside a module", op=op)
    return parent


def _conform(op: Operation, index: int, value: Any) -> np.ndarray:
    """Cast a rule's result to the declared dtype; a shape mismatch is a bug we report."""
    result_type = op.results[index].type
    array = np.asarray(value, dtype=numpy_dtype(result_type))
    if array.shape != shape_of(result_type):
        raise RlxError(
            f"interpreter rule of '{op.name}' produced shape {array.shape}, "
            f"declared {shape_of(result_type)} (internal error)",
            op=op,
        )
    return array
