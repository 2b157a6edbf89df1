"""Reductions computed once, then broadcast (part of the ``contractions`` stage).

The gradient of ``(x @ w).sum()`` w.r.t. ``x`` is ``ones @ w^T``; fusion folds the ones
into the product, leaving a reduction ``dx[m, k] = sum_n w[k, n]`` whose input does not
depend on ``m``. As one generic it summed ``w`` once per row of ``dx`` (M times the work,
through a strided read): a 64x1024x1024 ``rlx.grad`` took 286 ms against 0.7 for the same
product with a non-uniform cotangent. Here such a reduction (zero-filled, its output
dims that no input reads) becomes the reduction without those dims, then a broadcast::

    out[m, k] = sum_n w[k, n]      ->   r[k] = sum_n w[k, n];   out[m, k] = r[k]
"""

from __future__ import annotations

from typing import Any


def split_broadcast_reductions(module: Any) -> int:
    """Rewrite every such reduction generic; returns how many."""
    from rlx_mlir.lowering.schedules import walk_ops

    found = [(op, dims) for op in walk_ops(module)
             if op.name == "linalg.generic" and (dims := _broadcast_dims(op))]
    for op, dims in found:
        _split(op, dims)
    return len(found)


def _broadcast_dims(op: Any) -> list[int]:
    """Parallel output dims of a zero-filled single-result reduction that no input reads
    (and the body does not index): empty when the op is not one to split."""
    from mlir import ir

    from rlx_mlir.lowering.contractions import _init_is_fill, _map_dims

    static = all(isinstance(v.type, ir.RankedTensorType)
                 and ir.RankedTensorType(v.type).has_static_shape for v in op.operands)
    if len(op.results) != 1 or not static or not _init_is_fill(op):
        return []
    its = ["reduction" in str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    if not any(its) or any(inner.name == "linalg.index"
                           for inner in op.regions[0].blocks[0].operations):
        return []
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    out = _map_dims(maps[-1])
    if out is None:
        return []
    read = {ir.AffineDimExpr(e).position for m in maps[:-1] for e in m.results
            if isinstance(e, ir.AffineDimExpr)}
    if any(not isinstance(e, (ir.AffineDimExpr, ir.AffineConstantExpr))
           for m in maps[:-1] for e in m.results):
        return []
    unread = [d for d in out if d not in read and not its[d]]
    return unread if len(unread) < len(out) else []


def _split(op: Any, dims: list[int]) -> None:
    """``op`` as the reduction over the other dims, broadcast along ``dims``."""
    from mlir import ir
    from mlir.dialects import tensor

    from rlx_mlir.lowering import linalg_builders as linalg
    from rlx_mlir.lowering.contractions import _insertion_before, _value

    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    its = list(ir.ArrayAttr(op.attributes["iterator_types"]))
    n = maps[-1].n_dims
    # loop order: the first input's memory order (its map's dims), so the innermost loop
    # reads it contiguously (a column sum of w^T reduces over its outer dim)
    first = [ir.AffineDimExpr(e).position for e in maps[0].results
             if isinstance(e, ir.AffineDimExpr)]
    keep = [d for d in first if d not in dims] + [d for d in range(n)
                                                   if d not in dims and d not in first]
    renumber = {d: i for i, d in enumerate(keep)}
    out_type = ir.RankedTensorType(op.results[0].type)
    out_dims = [ir.AffineDimExpr(e).position for e in maps[-1].results]
    small_shape = [out_type.shape[p] for p, d in enumerate(out_dims) if d not in dims]
    fill = getattr(op.operands[len(op.operands) - 1].owner, "operation", None)
    with _insertion_before(op):
        empty = tensor.EmptyOp(small_shape, out_type.element_type).result
        init = _value(linalg.fill(fill.operands[0], outs=[empty]))
        new_maps = [_restricted(m, renumber, len(keep)) for m in maps]
        generic = linalg.GenericOp(
            [init.type], list(op.operands)[:-1], [init],
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in new_maps]),
            ir.ArrayAttr.get([its[d] for d in keep]))
        _move_body(op, generic)
        reduced = _value(generic)
        full = tensor.EmptyOp(list(out_type.shape), out_type.element_type).result
        rank = len(out_dims)
        kept_positions = [p for p, d in enumerate(out_dims) if d not in dims]
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        spread = linalg.GenericOp(
            [out_type], [reduced], [full],
            ir.ArrayAttr.get([ir.AffineMapAttr.get(ir.AffineMap.get(
                rank, 0, [ir.AffineExpr.get_dim(p) for p in kept_positions])),
                ir.AffineMapAttr.get(ir.AffineMap.get_identity(rank))]),
            ir.ArrayAttr.get([parallel] * rank))
        block = spread.regions[0].blocks.append(out_type.element_type, out_type.element_type)
        with ir.InsertionPoint(block):
            linalg.YieldOp([block.arguments[0]])
    op.results[0].replace_all_uses_with(_value(spread))
    op.erase()


def _restricted(amap: Any, renumber: dict[int, int], count: int) -> Any:
    """``amap`` over the kept dims only (dropped dims never appear in it but the output's,
    where their results go)."""
    from mlir import ir

    results = [ir.AffineExpr.get_dim(renumber[ir.AffineDimExpr(e).position])
               if isinstance(e, ir.AffineDimExpr) else e
               for e in amap.results
               if not isinstance(e, ir.AffineDimExpr) or ir.AffineDimExpr(e).position in renumber]
    return ir.AffineMap.get(count, 0, results)


def _move_body(source: Any, target: Any) -> None:
    """Clone ``source``'s body into ``target``'s empty region (same block arguments)."""
    from rlx_mlir.lowering.contractions import replay_ops

    old = source.regions[0].blocks[0]
    block = target.regions[0].blocks.append(*[a.type for a in old.arguments])
    replay_ops(old.operations, block, dict(zip(old.arguments, block.arguments, strict=True)))
