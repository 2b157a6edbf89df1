"""Structured control flow for LOWER rules: ``scf`` loops and branches on tensors,
index arithmetic, dynamic row slices and region inlining.

The bodies of rlx region ops are *cloned* (:func:`inline_block`) into the ``scf``
bodies built here; the cloned rlx ops are lowered on the pass's next sweep::

    def rule(op, e, init):
        (final,) = for_loop(e, 0, 10, [init],
                            lambda s, t, c: inline_block(s, op.body.block, [c]))
        return final
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, bufferization, scf, tensor
from xdsl.dialects.builtin import DYNAMIC_INDEX, IndexType, IntegerAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, OpResult, SSAValue

from rlx_mlir.dialects.base import shape_of
from rlx_mlir.lowering.emitter import Emitter

Index = SSAValue | int
Values = list[SSAValue]
LoopBody = Callable[..., Sequence[SSAValue]]
BranchBody = Callable[[Emitter], Sequence[SSAValue]]


# ---------------------------------------------------------------- region inlining


def inline_block(e: Emitter, block: Block, args: Sequence[SSAValue]) -> Values:
    """Clone ``block``'s ops (but its terminator) at ``e`` with its arguments bound to
    ``args``; return the terminator's operands as mapped."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        if op is block.last_op:
            return [mapping.get(v, v) for v in op.operands]
        e.emit(op.clone(value_mapper=mapping))
    raise ValueError("cannot inline an empty block")


# ---------------------------------------------------------------- index arithmetic


def index(e: Emitter, value: Index) -> SSAValue:
    """An ``index`` SSA value (Python ints become ``arith.constant``)."""
    if isinstance(value, SSAValue):
        return value
    return e.emit(arith.ConstantOp(IntegerAttr(value, IndexType())))


def index_add(e: Emitter, a: Index, b: Index) -> SSAValue:
    return e.emit(arith.AddiOp(index(e, a), index(e, b)))


def index_sub(e: Emitter, a: Index, b: Index) -> SSAValue:
    return e.emit(arith.SubiOp(index(e, a), index(e, b)))


def index_mul(e: Emitter, a: Index, b: Index) -> SSAValue:
    return e.emit(arith.MuliOp(index(e, a), index(e, b)))


def index_floordiv(e: Emitter, a: Index, b: Index) -> SSAValue:
    """``a // b`` for non-negative ``a`` and positive ``b``."""
    return e.emit(arith.DivUIOp(index(e, a), index(e, b)))


def index_cmp(e: Emitter, predicate: str, a: Index, b: Index) -> SSAValue:
    """``eq ne lt le gt ge`` (signed) -> i1."""
    table = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
    return e.emit(arith.CmpiOp(index(e, a), index(e, b), table[predicate]))


# ---------------------------------------------------------------- tensors


def extract_row(e: Emitter, x: SSAValue, row: Index) -> SSAValue:
    """``x[row]`` (rank-reducing ``tensor.extract_slice`` at a dynamic row)."""
    shape = shape_of(x.type)
    etype = x.type.element_type  # type: ignore[attr-defined]
    offsets: list[SSAValue | int] = [index(e, row), *[0] * (len(shape) - 1)]
    return e.emit(tensor.ExtractSliceOp(x, offsets, [1, *shape[1:]], [1] * len(shape),
                                        TensorType(etype, list(shape[1:]))))


def insert_row(e: Emitter, row_value: SSAValue, into: SSAValue, row: Index) -> SSAValue:
    """``into`` with ``into[row] = row_value`` (rank-expanding ``tensor.insert_slice``)."""
    shape = shape_of(into.type)
    op = tensor.InsertSliceOp.get(
        row_value, into, static_sizes=[1, *shape[1:]],
        static_offsets=[DYNAMIC_INDEX, *[0] * (len(shape) - 1)], offsets=[index(e, row)])
    return e.emit(op)


def first_element(e: Emitter, x: SSAValue) -> SSAValue:
    """The scalar ``x.flat[0]`` (``tensor.extract``)."""
    zeros = [index(e, 0) for _ in shape_of(x.type)]
    return e.emit(tensor.ExtractOp(x, zeros, x.type.element_type))  # type: ignore[attr-defined]


# ---------------------------------------------------------------- scf


def in_place(e: Emitter, values: Sequence[SSAValue], args: Sequence[SSAValue]) -> Values:
    """Each new tensor value written into its loop-carried block argument
    (``bufferization.materialize_in_destination``): One-Shot Bufferize needs a loop's
    yielded buffers to be equivalent to its iteration arguments (see
    :func:`drop_nested_materializations` for a loop nested in the body)."""
    return [e.emit(bufferization.MaterializeInDestinationOp(
                operands=[value, arg], result_types=[[arg.type]]))
            if value is not arg and isinstance(arg.type, TensorType) else value
            for value, arg in zip(values, args, strict=True)]


def _carried_from(value: SSAValue, arg: SSAValue) -> bool:
    """``value`` is ``arg``, or the result of loops whose iteration started from ``arg``
    (each loop of this module writes its results into its iteration arguments)."""
    while value is not arg:
        owner = value.owner
        if not isinstance(value, OpResult) or not isinstance(owner, (scf.ForOp, scf.WhileOp)):
            return False
        inits = owner.iter_args if isinstance(owner, scf.ForOp) else owner.arguments
        value = inits[value.index]
    return True


def drop_nested_materializations(root: Operation) -> None:
    """Remove each ``materialize_in_destination`` of a loop's result into the value that
    loop started from: a scan nested in a scan body already wrote there, and writing it
    again is a read-after-write conflict One-Shot Bufferize cannot resolve."""
    for op in list(root.walk()):
        if isinstance(op, bufferization.MaterializeInDestinationOp) and \
                _carried_from(op.source, op.dest):
            op.result.replace_all_uses_with(op.source)
            op.detach()
            op.erase()



def for_loop(e: Emitter, lower: Index, upper: Index, iter_args: Sequence[SSAValue],
             body: LoopBody) -> Values:
    """``scf.for %i = lower to upper step 1 iter_args(...)``; ``body(s, i, *iters)``
    returns the next iteration values; the final values are returned."""
    types = [v.type for v in iter_args]
    region = e.region([IndexType(), *types],
                      lambda s, i, *args: in_place(s, body(s, i, *args), args),
                      yield_op=scf.YieldOp)
    op = scf.ForOp(index(e, lower), index(e, upper), index(e, 1), list(iter_args), region)
    e.emit(op)
    return list(op.results)


def if_else(e: Emitter, cond: SSAValue, types: Sequence[Attribute], then_body: BranchBody,
            else_body: BranchBody) -> Values:
    """``scf.if cond -> types``; each branch ``body(s)`` returns its yielded values."""
    op = scf.IfOp(cond, list(types), e.region([], then_body, yield_op=scf.YieldOp),
                  e.region([], else_body, yield_op=scf.YieldOp))
    e.emit(op)
    return list(op.results)


def select_values(e: Emitter, cond: SSAValue, then_values: Sequence[SSAValue],
                  else_values: Sequence[SSAValue]) -> Values:
    """``cond ? then_values : else_values`` for values already computed."""
    return if_else(e, cond, [v.type for v in then_values],
                   lambda s: list(then_values), lambda s: list(else_values))


def while_loop(e: Emitter, init: Sequence[SSAValue], cond: LoopBody,
               body: LoopBody) -> Values:
    """``scf.while``: ``cond(s, *state)`` -> i1 (evaluated before every step),
    ``body(s, *state)`` -> next state; returns the final state."""
    types = [v.type for v in init]
    before = e.region(types, lambda s, *state: [cond(s, *state), *state],
                      yield_op=lambda flag, *state: scf.ConditionOp(flag, *state))
    after = e.region(types, lambda s, *state: in_place(s, body(s, *state), state),
                     yield_op=scf.YieldOp)
    op = scf.WhileOp(list(init), types, before, after)
    e.emit(op)
    return list(op.results)
