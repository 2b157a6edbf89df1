"""Decoded weights read inside a decode step's matmul (part of the ``contractions`` stage).

A weight-only quantized product of a few rows (``rlx.quant.dequant_matmul`` at one
token) arrives as an elementwise generic decoding the whole weight to f32 (``levels *
scales``, ``[K / bs, bs, N]``), collapsed to ``[K, N]`` and read by a ``linalg.matmul``.
The matmul only streams the weight once, so the decode's f32 copy (4x the bytes of int8)
is most of the time: ``1x4096x4096`` int8 took 3.5 ms against 1.8 for an f32 matmul.
Here the decode goes into the product itself, one generic over ``(m, k..., n)``::

    out[m, n] += x[m, k...] * decode(levels[k..., n], scales[..., n])

with ``n`` innermost, so the row schedule streams the bytes ``k`` row by ``k`` row,
64 columns at a time, and no decoded weight is ever written.
"""

from __future__ import annotations

from typing import Any

SKINNY_ROWS = 4
"""Products of fewer rows than this are decode steps (``schedules.MR``)."""


def fuse_decodes_into_skinny_matmuls(module: Any) -> int:
    """Rewrite every matmul of a few rows whose weight is an elementwise decode (used by
    that matmul only) as one generic; returns how many."""
    from rlx_mlir.lowering.schedules import walk_ops

    found = [(op, decode) for op in walk_ops(module)
             if op.name == "linalg.matmul" and (decode := _decoded_weight(op)) is not None]
    for op, decode in found:
        _fuse(op, decode)
    return len(found)


def _decoded_weight(op: Any) -> Any:
    """The decode generic behind a skinny matmul's ``B`` (through a collapse of its
    leading dims into ``K``), or None when the matmul is not one to rewrite. ``N`` needs
    only be a multiple of 16: the row schedule splits off the part past the last 64."""
    from mlir import ir

    from rlx_mlir.lowering.contractions import _default_maps
    from rlx_mlir.lowering.schedules import SKINNY_MIN_WEIGHTS

    if op.parent.name != "func.func" or not _default_maps(op):
        return None
    a, b, _ = (ir.RankedTensorType(v.type) for v in op.operands[:3])
    if not (a.has_static_shape and b.has_static_shape):
        return None
    (m, k), (_, n) = a.shape, b.shape
    if m >= SKINNY_ROWS or n % 16 or k * n < SKINNY_MIN_WEIGHTS:
        return None
    value = op.operands[1]
    producer = _owner(value)
    if getattr(producer, "name", "") == "tensor.collapse_shape":
        if not _collapses_into_rows(producer) or len(list(value.uses)) != 1:
            return None
        value = producer.operands[0]
        producer = _owner(value)
    if getattr(producer, "name", "") != "linalg.generic" or len(list(value.uses)) != 1:
        return None
    return producer if _is_decode(producer) else None


def _owner(value: Any) -> Any:
    return getattr(value.owner, "operation", value.owner)


def _collapses_into_rows(collapse: Any) -> bool:
    """``[k1, ..., kr, N] -> [K, N]``: every leading dim into the first."""
    from mlir import ir

    groups = [[int(ir.IntegerAttr(d).value) for d in ir.ArrayAttr(g)]
              for g in ir.ArrayAttr(collapse.attributes["reassociation"])]
    rank = ir.RankedTensorType(collapse.operands[0].type).rank
    return len(groups) == 2 and groups[1] == [rank - 1]


def _is_decode(generic: Any) -> bool:
    """All-parallel, one result through an identity map, a body of plain arithmetic that
    does not read its output."""
    from mlir import ir

    from rlx_mlir.lowering.schedules import _body_is_vectorizable

    its = [str(a) for a in ir.ArrayAttr(generic.attributes["iterator_types"])]
    if any("parallel" not in s for s in its) or len(generic.results) != 1:
        return False
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(generic.attributes["indexing_maps"])]
    if maps[-1] != ir.AffineMap.get_identity(maps[-1].n_dims) or \
            not all(m.is_projected_permutation for m in maps[:-1]):
        return False
    block = generic.regions[0].blocks[0]
    out = block.arguments[len(block.arguments) - 1]
    return _body_is_vectorizable(generic, gathers=True) and not list(out.uses)


def _fuse(op: Any, decode: Any) -> None:
    """``op`` (``x @ collapse(decode)``) -> one generic over ``(m, k1..kr, n)``."""
    from mlir import ir
    from mlir.dialects import arith

    from rlx_mlir.lowering import linalg_builders as linalg
    from rlx_mlir.lowering.contractions import _expanded, _insertion_before, _value
    from rlx_mlir.lowering.schedules import GATHER_ATTR

    x, init = op.operands[0], op.operands[2]
    weight_shape = list(ir.RankedTensorType(decode.results[0].type).shape)
    rank = len(weight_shape) + 1  # m, k1..kr, n
    m = ir.RankedTensorType(x.type).shape[0]
    with _insertion_before(op):
        rows = _expanded(x, [1, rank - 2], [m, *weight_shape[:-1]])
        inputs = [rows, *list(decode.operands)[: len(decode.operands) - 1]]
        maps = [_map(rank, list(range(rank - 1)))]
        maps += [_shifted(ir.AffineMapAttr(a).value, rank)
                 for a in list(ir.ArrayAttr(decode.attributes["indexing_maps"]))[:-1]]
        maps.append(_map(rank, [0, rank - 1]))
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        reduction = ir.Attribute.parse("#linalg.iterator_type<reduction>")
        generic = linalg.GenericOp(
            [init.type], inputs, [init], ir.ArrayAttr.get([ir.AffineMapAttr.get(a) for a in maps]),
            ir.ArrayAttr.get([parallel, *[reduction] * (rank - 2), parallel]))
        block = generic.regions[0].blocks.append(
            *[ir.RankedTensorType(v.type).element_type for v in inputs],
            ir.RankedTensorType(init.type).element_type)
        weight = _replayed_body(decode, block)
        with ir.InsertionPoint(block):
            product = arith.MulFOp(block.arguments[0], weight).result
            linalg.YieldOp([arith.AddFOp(block.arguments[len(block.arguments) - 1], product).result])
    if any(inner.name == "tensor.extract" for inner in block.operations):
        generic.attributes[GATHER_ATTR] = ir.UnitAttr.get()  # table lookups: vector gathers
    collapse = _owner(op.operands[1])
    op.results[0].replace_all_uses_with(_value(generic))
    op.erase()
    if collapse is not decode:
        collapse.erase()
    decode.erase()


def _replayed_body(decode: Any, block: Any) -> Any:
    """Clone ``decode``'s body into ``block`` (its inputs are ``block``'s arguments from
    the second on); returns the value it yields."""
    from rlx_mlir.lowering.contractions import replay_ops

    old = decode.regions[0].blocks[0]
    ops = list(old.operations)
    mapping = replay_ops(ops[:-1], block, {old.arguments[i]: block.arguments[i + 1]
                                           for i in range(len(old.arguments) - 1)})
    yielded = ops[-1].operands[0]
    return mapping.get(yielded, yielded)


def _map(rank: int, dims: list[int]) -> Any:
    from mlir import ir

    return ir.AffineMap.get(rank, 0, [ir.AffineExpr.get_dim(d) for d in dims])


def _shifted(amap: Any, rank: int) -> Any:
    """A map over the decode's dims ``(k1..kr, n)`` as one over ``(m, k1..kr, n)``."""
    from mlir import ir

    shift = _map(rank, list(range(1, rank)))
    return ir.AffineMap.get(rank, 0, [e.compose(shift) for e in amap.results])
