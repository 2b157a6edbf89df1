"""``scf.forall`` over static tiles of tensors, for lowerings that work one block at a time.

xDSL 0.74 defines neither ``scf.forall`` nor ``tensor.parallel_insert_slice``; the three
ops below are declared only to be built and printed for the hand-off (the interpreter
never sees them). :func:`forall` is the builder the lowerings use::

    def body(s: Emitter, ivs):                # ivs: one index per loop
        row = slice_of(s, x, [ivs[0], 0], [1, 256])
        return [(s.generic(...row...), [ivs[0], 0])]   # (tile, its offsets in the output)

    (y,) = forall(e, [8], [e.empty([8, 256], f32)], body)

prints as::

    %y = scf.forall (%i) in (8) shared_outs(%out = %init) -> (tensor<8x256xf32>) {
      %row = tensor.extract_slice %x[%i, 0] [1, 256] [1, 1] ...
      ...
      scf.forall.in_parallel {
        tensor.parallel_insert_slice %tile into %out[%i, 0] [1, 256] [1, 1] ...
      }
    }

The iterations are independent (each writes its own tiles), so the ``threads`` stage of
the fast pipeline runs them on the threading runtime's workers (``scf.forall`` -> parallel
loop), and the ops inside are scheduled single-threaded, on cache-sized tiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.dialects import arith, scf, tensor
from xdsl.dialects.builtin import DenseArrayBase, IndexType, IntegerAttr, TensorType, i64
from xdsl.ir import Attribute, Block, Region, SSAValue
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.rewriter import InsertPoint
from xdsl.traits import IsTerminator, NoTerminator
from xdsl.utils.hints import isa

from rlx_mlir.lowering.emitter import Emitter

DYNAMIC = -(2**63)  # ShapedType::kDynamic in a static_* index list

Index = SSAValue | int
"""An offset: a static integer or an ``index`` value."""


@irdl_op_definition
class ForallOp(IRDLOperation):
    """``scf.forall`` with static bounds and tensor ``shared_outs`` (results)."""

    name = "scf.forall"

    dynamic_lower_bound = var_operand_def(IndexType)
    dynamic_upper_bound = var_operand_def(IndexType)
    dynamic_step = var_operand_def(IndexType)
    outputs = var_operand_def(TensorType)
    static_lower_bound = prop_def(DenseArrayBase, prop_name="staticLowerBound")
    static_upper_bound = prop_def(DenseArrayBase, prop_name="staticUpperBound")
    static_step = prop_def(DenseArrayBase, prop_name="staticStep")
    res = var_result_def(TensorType)
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)


@irdl_op_definition
class InParallelOp(IRDLOperation):
    """``scf.forall.in_parallel``: the forall body's terminator, holding its inserts."""

    name = "scf.forall.in_parallel"

    body = region_def("single_block")

    traits = traits_def(IsTerminator(), NoTerminator())


@irdl_op_definition
class ParallelInsertSliceOp(IRDLOperation):
    """``tensor.parallel_insert_slice source into dest[offsets] [sizes] [strides]``."""

    name = "tensor.parallel_insert_slice"

    source = operand_def(TensorType)
    dest = operand_def(TensorType)
    offsets = var_operand_def(IndexType)
    sizes = var_operand_def(IndexType)
    strides = var_operand_def(IndexType)
    static_offsets = prop_def(DenseArrayBase)
    static_sizes = prop_def(DenseArrayBase)
    static_strides = prop_def(DenseArrayBase)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)


def _i64_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def _split_offsets(offsets: Sequence[Index]) -> tuple[list[int], list[SSAValue]]:
    static = [o if isinstance(o, int) else DYNAMIC for o in offsets]
    return static, [o for o in offsets if not isinstance(o, int)]


def index_mul(e: Emitter, iv: SSAValue, factor: int) -> Index:
    """``iv * factor`` as an index value (``iv`` itself when ``factor`` is 1)."""
    if factor == 1:
        return iv
    c = e.emit(arith.ConstantOp(IntegerAttr(factor, IndexType())))
    return e.emit(arith.MuliOp(iv, c))


def slice_of(e: Emitter, x: SSAValue, offsets: Sequence[Index], sizes: Sequence[int]) -> SSAValue:
    """``tensor.extract_slice x[offsets] [sizes] [1, ...]`` (same rank as ``x``)."""
    assert isa(x.type, TensorType[Attribute])
    result = TensorType(x.type.element_type, list(sizes))
    return e.emit(tensor.ExtractSliceOp(x, list(offsets), list(sizes), [1] * len(sizes), result))


def insert_at(e: Emitter, tile: SSAValue, dest: SSAValue, offsets: Sequence[Index]) -> SSAValue:
    """``tensor.insert_slice tile into dest[offsets] [tile's shape] [1, ...]``."""
    assert isa(tile.type, TensorType[Attribute])
    sizes = list(tile.type.get_shape())
    static, dynamic = _split_offsets(offsets)
    return e.emit(tensor.InsertSliceOp.get(tile, dest, sizes, static, [1] * len(sizes),
                                           offsets=dynamic))


def slice_unless_whole(e: Emitter, x: SSAValue, offsets: Sequence[Index],
                       sizes: Sequence[int]) -> SSAValue:
    """:func:`slice_of`, or ``x`` itself when the slice is all of it."""
    if list(sizes) == list(x.type.get_shape()):  # type: ignore[attr-defined]
        return x
    return slice_of(e, x, offsets, sizes)


def insert_at_unless_whole(e: Emitter, tile: SSAValue, dest: SSAValue,
                           offsets: Sequence[Index]) -> SSAValue:
    """:func:`insert_at`, or ``tile`` itself when it covers all of ``dest``."""
    if tile.type == dest.type:
        return tile
    return insert_at(e, tile, dest, offsets)


Tiles = Sequence[tuple[SSAValue, Sequence[Index]]]
TileBody = Callable[[Emitter, Sequence[SSAValue]], Tiles]
OutputsBody = Callable[[Emitter, Sequence[SSAValue], Sequence[SSAValue]], Tiles]


def forall(e: Emitter, bounds: Sequence[int], inits: Sequence[SSAValue],
           body: TileBody) -> list[SSAValue]:
    """``scf.forall`` over ``0 <= ivs < bounds``: ``body(emitter, ivs)`` returns, for each
    of ``inits`` in order, the tile it computed and the tile's offsets in that output."""
    return forall_with_outputs(e, bounds, inits, lambda s, ivs, outs: body(s, ivs))


def forall_with_outputs(e: Emitter, bounds: Sequence[int], inits: Sequence[SSAValue],
                        body: OutputsBody) -> list[SSAValue]:
    """:func:`forall` whose ``body(emitter, ivs, outs)`` also sees the shared outputs, to
    compute its tiles in place: a tile built on ``extract_slice outs[i]`` at the offsets it
    is inserted at bufferizes to a view of the output, not a buffer copied into it."""
    block = Block(arg_types=[IndexType()] * len(bounds) + [v.type for v in inits])
    ivs, outs = block.args[: len(bounds)], block.args[len(bounds):]
    inner = Emitter(InsertPoint.at_end(block), e.shared)
    tiles = list(body(inner, ivs, outs))
    if len(tiles) != len(inits):
        raise ValueError(f"forall body returned {len(tiles)} tiles for {len(inits)} outputs")
    inserts = Block()
    for (tile, offsets), out in zip(tiles, outs, strict=True):
        inserts.add_op(_parallel_insert(tile, out, offsets))
    block.add_op(InParallelOp(regions=[Region(inserts)]))
    op = ForallOp(
        operands=[[], [], [], list(inits)],
        result_types=[[v.type for v in inits]],
        properties={"staticLowerBound": _i64_array([0] * len(bounds)),
                    "staticUpperBound": _i64_array(bounds),
                    "staticStep": _i64_array([1] * len(bounds))},
        regions=[Region(block)],
    )
    e.emit(op)
    return list(op.results)


def _parallel_insert(tile: SSAValue, dest: SSAValue, offsets: Sequence[Index]) -> ParallelInsertSliceOp:
    assert isa(tile.type, TensorType[Attribute])
    sizes = list(tile.type.get_shape())
    static, dynamic = _split_offsets(offsets)
    return ParallelInsertSliceOp(
        operands=[tile, dest, dynamic, [], []],
        properties={"static_offsets": _i64_array(static), "static_sizes": _i64_array(sizes),
                    "static_strides": _i64_array([1] * len(sizes))},
    )


def chunked_forall(e: Emitter, chunks: int, bounds: Sequence[int], inits: Sequence[SSAValue],
                   body: TileBody) -> list[SSAValue]:
    """:func:`forall` over ``(outer, inner) = bounds`` run as ``chunks`` parallel
    iterations, each an ``scf.for`` over its ``outer / chunks`` rows of the space: one
    task per thread, so the runtime never has more tasks running than cores (with
    one task per iteration, the caller thread ran beside both workers and a 32-head
    attention took 5.5 or 10 ms from call to call). Every tile's first offset must be the
    ``outer`` index (each output is cut along its dim 0); a plain forall when ``chunks``
    does not divide ``outer``."""
    from rlx_mlir.lowering.regions import index, index_add

    outer, inner = bounds
    if chunks <= 1 or outer % chunks:
        return forall(e, bounds, inits, body)
    per = outer // chunks

    def loop(t: Emitter, count: int, carried: Sequence[SSAValue],
             step: Callable[..., list[SSAValue]]) -> list[SSAValue]:
        region = t.region([IndexType(), *(v.type for v in carried)], step, yield_op=scf.YieldOp)
        op = scf.ForOp(index(t, 0), index(t, count), index(t, 1), list(carried), region)
        t.emit(op)
        return list(op.results)

    def chunk(t: Emitter, ivs: Sequence[SSAValue],
              outs: Sequence[SSAValue]) -> list[tuple[SSAValue, list[Index]]]:
        base = index_mul(t, ivs[0], per)
        parts = [slice_of(t, out, [base] + [0] * (len(out.type.get_shape()) - 1),  # type: ignore[attr-defined]
                          [per, *out.type.get_shape()[1:]])  # type: ignore[attr-defined]
                 for out in outs]

        # two nested loops, not one over per * inner split by / and %: LLVM's loop strength
        # reduction took 0.1 s on each attention kernel's addresses built from i / H, i % H
        def row_step(s: Emitter, row: SSAValue, *acc: SSAValue) -> list[SSAValue]:
            def col_step(c: Emitter, col: SSAValue, *inner_acc: SSAValue) -> list[SSAValue]:
                row_ivs = [index_add(c, base, row), col]
                tiles = body(c, row_ivs)
                for _, offsets in tiles:
                    if offsets[0] is not row_ivs[0]:
                        raise ValueError("chunked_forall: a tile is not cut along the outer index")
                # inserted in place (no materialize_in_destination: one-shot bufferize
                # copies where it must, e.g. when CSE made two accumulators one zero tensor)
                return [insert_at(c, tile, part, [row, *offsets[1:]])
                        for (tile, offsets), part in zip(tiles, inner_acc, strict=True)]

            return loop(s, inner, acc, col_step)

        done = loop(t, per, parts, row_step)
        return [(v, [base] + [0] * (len(v.type.get_shape()) - 1)) for v in done]  # type: ignore[attr-defined]

    return forall_with_outputs(e, [chunks], inits, chunk)
