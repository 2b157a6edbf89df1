"""The weight gradient of ``rlx.grouped_matmul`` (SPEC 5.14)::

    %dw = rlx.grouped_matmul_backward_weight %x, %dy, %ids {experts = 3 : i64}
            : (tensor<6x4xf32>, tensor<6x5xf32>, tensor<6xi32>) -> tensor<3x4x5xf32>

``dw[e] = sum over the tokens i with ids[i] = e of outer(x[i], dy[i])`` (ids clamped as
the forward op reads them); an expert without tokens gets zeros. It is bilinear in x and
dy, so its own gradients are grouped matmuls: the op is closed under differentiation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.ir import SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import RlxOp, ShapeError, require, shape_of, tensor
from rlx_mlir.dialects.moe import (
    BLOCK_ROWS,
    BYTES,
    batched_ids,
    batched_tokens,
    block_loop,
    ceil_blocks,
    column_tile,
    expect_tokens,
    expert_rows,
    grouped_matmul,
    routing,
    scalar_at,
    sorted_rows,
    weight_gradient,
)
from rlx_mlir.rules import INTERPRET, JVP, LOWER, VJP, VMAP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext


@irdl_op_definition
class GroupedMatmulBackwardWeightOp(RlxOp):
    """``dw [E, K, N]`` of ``rlx.grouped_matmul`` from ``x [M, K]``, ``dy [M, N]`` and the
    ids ``[M]``; ``E`` is the ``experts`` attribute."""

    name = "rlx.grouped_matmul_backward_weight"
    x = operand_def(TensorType)
    dy = operand_def(TensorType)
    ids = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"experts": "i64 >= 1: E, the number of experts"}

    @classmethod
    def infer(cls, types, attrs, out):
        x, dy, ids = types
        tokens, features = expect_tokens(x, ids, cls.name)
        columns = shape_of(dy)
        if len(columns) != 2 or columns[0] != tokens or dy.element_type != x.element_type:
            raise ShapeError(f"dy must be [{tokens}, N] of x's element type "
                             f"{x.element_type}, got {dy}")
        experts = require(attrs, "experts", int)
        if experts < 1:
            raise ShapeError(f"experts must be >= 1, got {experts}")
        return [tensor((experts, features, columns[1]), str(x.element_type))]


@INTERPRET.register(GroupedMatmulBackwardWeightOp)
def _interpret_weight_gradient(op: GroupedMatmulBackwardWeightOp, x: np.ndarray,
                               dy: np.ndarray, ids: np.ndarray) -> np.ndarray:
    experts = op.attr("experts")
    rows = expert_rows(ids, experts)
    dw = np.zeros((experts, x.shape[1], dy.shape[1]), dtype=x.dtype)
    for expert in np.unique(rows):
        chosen = rows == expert
        dw[expert] = x[chosen].T @ dy[chosen]
    return dw


@VJP.register(GroupedMatmulBackwardWeightOp)
def _vjp_weight_gradient(ctx: VjpContext, op: GroupedMatmulBackwardWeightOp,
                         g: Tensor) -> list[Tensor | None]:
    """With ``G = d loss / d dw``: ``dx[i] = dy[i] @ G[e]^T``, ``d dy[i] = x[i] @ G[e]``."""
    x, dy, ids = ctx.inputs(op)
    return [grouped_matmul(ctx.b, dy, g, ids, True), grouped_matmul(ctx.b, x, g, ids, False),
            None]


@JVP.register(GroupedMatmulBackwardWeightOp)
def _jvp_weight_gradient(ctx: JvpContext, op: GroupedMatmulBackwardWeightOp,
                         tx: Tensor | None, tdy: Tensor | None,
                         _tids: Tensor | None) -> list[Tensor | None]:
    x, dy, ids = ctx.inputs(op)
    experts = op.attr("experts")
    return [ctx.add(None if tx is None else weight_gradient(ctx.b, tx, dy, ids, experts),
                    None if tdy is None else weight_gradient(ctx.b, x, tdy, ids, experts))]


@VMAP.register(GroupedMatmulBackwardWeightOp)
def _vmap_weight_gradient(ctx: VmapContext, op: GroupedMatmulBackwardWeightOp, xs,
                          batched) -> list[Tensor]:
    """One op over ``B * E`` experts: example b's ids offset by ``b * E``."""
    x, dy, ids = xs
    experts = op.attr("experts")
    dw = weight_gradient(ctx.b, batched_tokens(ctx, x, batched[0]),
                         batched_tokens(ctx, dy, batched[1]),
                         batched_ids(ctx, ids, batched[2], experts), ctx.size * experts)
    return [dw.reshape((ctx.size, *shape_of(op.result.type)))]


def _block_outer_products(s, xs: SSAValue, dys: SSAValue, block: SSAValue, column,
                          width: int, acc: SSAValue) -> SSAValue:
    """``acc += xs[rows]^T @ dys[rows, column:column + width]`` for the block's rows."""
    from rlx_mlir.lowering import forall as F

    row = F.index_mul(s, block, BLOCK_ROWS)
    lhs = s.transpose(F.slice_of(s, xs, [row, 0], [BLOCK_ROWS, shape_of(xs.type)[1]]), [1, 0])
    rhs = F.slice_of(s, dys, [row, column], [BLOCK_ROWS, width])
    d = [AffineExpr.dimension(i) for i in range(3)]
    maps = [AffineMap(3, 0, (d[0], d[2])), AffineMap(3, 0, (d[2], d[1])),
            AffineMap(3, 0, (d[0], d[1]))]
    return s.generic([lhs, rhs], [acc], maps, ["parallel", "parallel", "reduction"],
                     lambda t, a, b, c: t.add(c, t.mul(a, b)))


@LOWER.register(GroupedMatmulBackwardWeightOp)
def _lower_weight_gradient(op: GroupedMatmulBackwardWeightOp, e, x: SSAValue,
                           dy: SSAValue, ids: SSAValue) -> SSAValue:
    """A forall over (expert, column tile) pairs, each summing the expert's blocks'
    ``x^T dy`` into a ``[K, tile]`` accumulator (in L2 up to K = 2048 in f32)."""
    from rlx_mlir.lowering import forall as F
    from rlx_mlir.lowering.schedules import num_threads

    experts, features, columns = shape_of(op.result.type)
    etype = x.type.element_type  # type: ignore[attr-defined]
    if not (shape_of(x.type)[0] and features and columns):  # no products: zeros
        return e.fill(0, [experts, features, columns], etype)
    route = routing(e, ids, experts)
    xs, dys = sorted_rows(e, route, x), sorted_rows(e, route, dy)
    width = column_tile(columns, 1, features, BYTES[str(etype)])

    def expert_tile(t, ivs) -> list[tuple[SSAValue, list]]:
        column = F.index_mul(t, ivs[1], width)
        first = scalar_at(t, route.first_block, ivs[0])
        end = t.add(first, ceil_blocks(t, scalar_at(t, route.counts, ivs[0])))
        total = block_loop(t, first, end, t.fill(0, [features, width], etype),
                           lambda s, b, acc: _block_outer_products(s, xs, dys, b, column,
                                                                   width, acc))
        return [(t.reshape(total, [1, features, width]), [ivs[0], 0, column])]

    return F.chunked_forall(e, num_threads(), [experts, columns // width],
                            [e.empty([experts, features, columns], etype)], expert_tile)[0]


OPS = [GroupedMatmulBackwardWeightOp]
