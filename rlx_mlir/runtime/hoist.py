"""Data constants kept out of the compile-cache key.

A traced function that closes over numpy data (``grad(lambda p: loss(p, batch))(params)``
called on a new batch each step) embeds the data as ``rlx.constant`` ops, so every step's
module text differs: each was a new compile, and each compile's native code stays alive
(DESIGN 4.6), so memory grew without bound. Before keying, :func:`hoist_constants` turns
each such constant of a public function's body into a trailing argument of that function;
the modules of every step are then one text, compiled once, and the executable feeds the
step's values to the hidden arguments (``Executable(..., hidden=...)``).

>>> hoisted, values = hoist_constants(module)  # doctest: +SKIP
>>> values                                     # doctest: +SKIP
{'main': (array([[0.1, ...]], dtype=float32),)}
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FunctionType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Operation

from rlx_mlir.dialects.base import numpy_dtype, shape_of
from rlx_mlir.runtime.signature import arg_attr_dicts, arg_names, fresh_name

HOISTED_NAME = "rlx_hoisted_constant"
"""The ``rlx.name`` stem of the arguments that stand for hoisted constants."""


def hoistable(op: Operation) -> bool:
    """A data constant: an ``rlx.constant`` of two or more elements, not all equal (the
    lowering folds numbers and splats into the code), other than the positions of a
    strided or reversed slice (``x[::2]``: the lowering reads them as an arithmetic
    progression, a reversed copy 7x faster than gathering through loaded indices)."""
    if op.name != "rlx.constant" or _slice_positions(op):
        return False
    value = op.attributes.get("value")
    return (isinstance(value, DenseIntOrFPElementsAttr)
            and int(np.prod(value.get_shape())) >= 2 and not value.is_splat())


def _slice_positions(op: Operation) -> bool:
    """A 1-d integer arithmetic progression read only as ``rlx.gather`` indices."""
    uses = list(op.results[0].uses)
    if not uses or any(u.operation.name != "rlx.gather" or u.index != 1 for u in uses):
        return False
    value = op.attributes.get("value")
    if not isinstance(value, DenseIntOrFPElementsAttr) or len(value.get_shape()) != 1:
        return False
    positions = np.asarray(value.get_values())
    return positions.dtype.kind == "i" and len(set(np.diff(positions).tolist())) <= 1


def constant_value(op: Operation) -> np.ndarray:
    """The read-only value of an ``rlx.constant`` (a view of its attribute's bytes)."""
    value = op.attributes["value"]
    t = op.results[0].type
    return np.frombuffer(value.data.data, numpy_dtype(t)).reshape(shape_of(t))


def hoist_constants(module: ModuleOp) -> tuple[ModuleOp, dict[str, tuple[np.ndarray, ...]]]:
    """``(module, {})`` when no public function body holds a data constant; else a copy
    in which each one is a new trailing argument of its function, and per function name
    the values those arguments take."""
    if not any(hoistable(op) for f in _public_funcs(module) for op in f.body.block.ops):
        return module, {}
    copy = module.clone()
    return copy, {f.sym_name.data: _hoist_in(f) for f in _public_funcs(copy)}


def _public_funcs(module: ModuleOp) -> list[func.FuncOp]:
    return [op for op in module.ops if isinstance(op, func.FuncOp) and op.body.blocks
            and (op.sym_visibility is None or op.sym_visibility.data == "public")]


def _hoist_in(f: func.FuncOp) -> tuple[np.ndarray, ...]:
    """Move ``f``'s top-level data constants to trailing arguments; their values."""
    block = f.body.block
    constants = [op for op in block.ops if hoistable(op)]
    attrs, taken = arg_attr_dicts(f), set(arg_names(f))
    values = []
    for op in constants:
        name = fresh_name(HOISTED_NAME, taken)
        taken.add(name)
        arg = block.insert_arg(op.results[0].type, len(block.args))
        arg.name_hint = name
        values.append(constant_value(op))
        op.results[0].replace_all_uses_with(arg)
        block.erase_op(op)
        attrs.append({"rlx.name": StringAttr(name)})
    if constants:
        f.function_type = FunctionType.from_lists([a.type for a in block.args],
                                                  list(f.function_type.outputs.data))
        f.arg_attrs = ArrayAttr([DictionaryAttr(a) for a in attrs])
    return tuple(values)
