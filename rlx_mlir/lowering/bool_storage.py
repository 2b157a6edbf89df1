"""Booleans live in memory as ``i8`` (0/1), the layout of numpy ``bool``.

MLIR 22's memref-to-LLVM conversion aborts the process on a store of ``i1`` elements
(``integralElementType.getWidth() >= 8``), so before the hand-off every
``tensor<...xi1>`` becomes ``tensor<...xi8>``; scalars stay ``i1`` inside region bodies::

    ^bb0(%c: i1, %o: i1): ... linalg.yield %p : i1
    # becomes
    ^bb0(%c8: i8, %o8: i8): %c = arith.trunci %c8 : i8 to i1 ... %p8 = arith.extui %p ...
"""

from __future__ import annotations

from xdsl.dialects import arith, func, tensor
from xdsl.dialects.builtin import (
    DenseIntOrFPElementsAttr,
    FunctionType,
    IntegerType,
    MemRefType,
    ModuleOp,
    TensorType,
    i1,
    i8,
)
from xdsl.dialects.linalg import ops as linalg
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from rlx_mlir.diagnostics import RlxError


def widen(t: Attribute) -> Attribute:
    """``tensor<2xi1>`` -> ``tensor<2xi8>``; other types unchanged."""
    if isinstance(t, TensorType) and t.element_type == i1:
        return TensorType(i8, t.get_shape())
    return t


def widen_bool_storage(module: ModuleOp) -> None:
    """Rewrite ``module`` in place so that no tensor holds ``i1`` elements (one walk and
    nothing else when none does)."""
    if _bool_storage_op(module) is None:
        return
    for op in list(module.walk()):
        _widen_constant(op)
        _widen_values(op)
        _fix_scalar_boundary(op)
    for op in module.walk():
        if isinstance(op, func.FuncOp):
            ftype = op.function_type
            op.function_type = FunctionType.from_lists(
                [widen(t) for t in ftype.inputs.data], [widen(t) for t in ftype.outputs.data])
    _check_no_bool_storage(module)


def _widen_values(op: Operation) -> None:
    for result in list(op.results):
        if widen(result.type) != result.type:
            Rewriter.replace_value_with_new_type(result, widen(result.type))
    for region in op.regions:
        for block in region.blocks:
            _widen_block_args(op, block)


def _widen_block_args(op: Operation, block: Block) -> None:
    """Tensor args become i8 tensors; linalg element args become i8 plus a trunci."""
    for arg in list(block.args):
        if widen(arg.type) != arg.type:
            Rewriter.replace_value_with_new_type(arg, widen(arg.type))
        elif op.name.startswith("linalg.") and arg.type == i1:
            _narrow_after(Rewriter.replace_value_with_new_type(arg, i8), block)
    terminator = block.last_op
    if op.name.startswith("linalg.") and isinstance(terminator, linalg.YieldOp):
        _extend_operands(terminator)


def _narrow_after(arg: SSAValue, block: Block) -> None:
    trunc = arith.TruncIOp(arg, i1)
    arg.replace_uses_with_if(trunc.result, lambda use: use.operation is not trunc)
    Rewriter.insert_op(trunc, InsertPoint.at_start(block))


def _extend_operands(op: Operation) -> None:
    """Replace ``i1`` scalar operands of ``op`` by ``arith.extui`` to ``i8``."""
    operands = list(op.operands)
    for i, value in enumerate(operands):
        if value.type == i1:
            ext = arith.ExtUIOp(value, i8)
            Rewriter.insert_op(ext, InsertPoint.before(op))
            operands[i] = ext.result
    op.operands = operands


def _widen_constant(op: Operation) -> None:
    if not isinstance(op, arith.ConstantOp) or not isinstance(op.value, DenseIntOrFPElementsAttr):
        return
    ttype = op.value.get_type()
    if isinstance(ttype, TensorType) and ttype.element_type == i1:
        values = [int(bool(v)) for v in op.value.get_values()]
        op.properties["value"] = DenseIntOrFPElementsAttr.from_list(widen(ttype), values)


def _fix_scalar_boundary(op: Operation) -> None:
    """Scalars entering or leaving a (now i8) tensor outside linalg regions."""
    if isinstance(op, (linalg.FillOp, tensor.FromElementsOp, tensor.InsertOp, tensor.SplatOp)):
        _extend_operands(op)
    elif isinstance(op, tensor.ExtractOp) and op.result.type == i1:
        wide = Rewriter.replace_value_with_new_type(op.result, i8)
        trunc = arith.TruncIOp(wide, i1)
        wide.replace_uses_with_if(trunc.result, lambda use: use.operation is not trunc)
        Rewriter.insert_op(trunc, InsertPoint.after(op))


def _bool_storage_op(module: ModuleOp) -> Operation | None:
    """The first op defining an ``i1`` tensor or memref (a result or a block argument)."""
    for op in module.walk():
        for value in (*op.results, *(a for r in op.regions for b in r.blocks for a in b.args)):
            t = value.type
            if isinstance(t, (TensorType, MemRefType)) and isinstance(t.element_type, IntegerType) \
                    and t.element_type.width.data == 1:
                return op
    return None


def _check_no_bool_storage(module: ModuleOp) -> None:
    op = _bool_storage_op(module)
    if op is not None:
        raise RlxError(f"'{op.name}' keeps an i1 tensor after bool widening "
                       "(upstream would abort storing it); report this", op=op)
