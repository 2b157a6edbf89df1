"""Mixture-of-experts ops (SPEC 2.3.2, 5.14): ``rlx.grouped_matmul``.

Each token (row of ``x``) is multiplied by the weight matrix of its expert::

    %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<6x5xf32>

``y[i] = x[i] @ w[ids[i]]``; with ``transpose_w`` the weights are ``[E, N, K]`` and
``y[i] = x[i] @ w[ids[i]]^T`` (the form of the input gradient). Expert ids are read as
``rlx.gather`` reads indices: f32 ids are truncated, and ids outside ``[0, E)`` are clamped.

Rules: the VJP sends ``dy`` to x through the grouped matmul with the other ``transpose_w``,
and to w through ``rlx.grouped_matmul_backward_weight`` (``dw[e] = sum over the tokens of e
of x[i]^T dy[i]``); the ids get none. The JVP is bilinear. Under vmap the batch folds into
the tokens (and, for batched weights, into the experts, with ids offset per example), so a
batch of MoE layers is still one op, where RLX has no batching rule.

Lowering: a counting sort puts the tokens of each expert in consecutive blocks of
:data:`BLOCK_ROWS` rows (padded with a zero row), one static ``[BLOCK_ROWS, K] x [K, N]``
matmul runs per used block, the blocks split over the threads, and the rows are read back in
token order. The sort is emitted once per function for the forward and gradient ops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects import tensor as tensor_ops
from xdsl.dialects.builtin import IndexType, TensorType, i64
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    FLOAT_DTYPES,
    RlxOp,
    ShapeError,
    expect_index,
    expect_rank,
    fmt_shape,
    optional,
    shape_of,
    tensor,
)
from rlx_mlir.dialects.shape import gather_rows, index_position, index_positions, lower_row_gather
from rlx_mlir.rules import INTERPRET, JVP, LOWER, VJP, VMAP

BYTES = {"f32": 4, "f64": 8}

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext

TRANSPOSE_DOC = "bool, default false: w is [E, N, K] and y[i] = x[i] @ w[ids[i]]^T"


def expect_tokens(x: TensorType, ids: TensorType, what: str) -> tuple[int, int]:
    """``(M, K)`` of a float ``x [M, K]`` whose ids are ``[M]``."""
    tokens, features = expect_rank(x, (2,), f"'{what}' x")
    if str(x.element_type) not in FLOAT_DTYPES:
        raise ShapeError(f"'{what}' computes in f32 or f64, got x {x}")
    expect_index(ids, f"'{what}' expert ids")
    if shape_of(ids) != (tokens,):
        raise ShapeError(f"expert ids must have shape [{tokens}] (one per row of x), "
                         f"got {fmt_shape(shape_of(ids))}")
    return tokens, features


def expert_rows(ids: np.ndarray, experts: int) -> np.ndarray:
    """Each token's expert as gather reads it (truncated, clamped to ``[0, experts)``).

    >>> expert_rows(np.array([1.7, -3.0, 9.0], np.float32), 4).tolist()
    [1, 0, 3]
    """
    return np.clip(index_positions(ids), 0, experts - 1)


@irdl_op_definition
class GroupedMatmulOp(RlxOp):
    """``y[i] = x[i] @ w[ids[i]]`` for ``x [M, K]``, ``w [E, K, N]``, ``ids [M]`` (SPEC
    2.3.2 ``GroupedMatMul``).

    Example::

        %y = rlx.grouped_matmul %x, %w, %ids : (tensor<6x4xf32>, tensor<3x4x5xf32>, tensor<6xi32>) -> tensor<6x5xf32>
    """

    name = "rlx.grouped_matmul"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    ids = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"transpose_w": TRANSPOSE_DOC}

    @classmethod
    def infer(cls, types, attrs, out):
        x, w, ids = types
        _, features = expect_tokens(x, ids, cls.name)
        weights = expect_rank(w, (3,), f"'{cls.name}' w")
        if w.element_type != x.element_type:
            raise ShapeError(f"w must have x's element type {x.element_type}, got {w}")
        transposed = optional(attrs, "transpose_w", bool, False)
        inner, outer = (weights[2], weights[1]) if transposed else (weights[1], weights[2])
        if weights[0] == 0 or inner != features:
            layout = "[E, N, K]" if transposed else "[E, K, N]"
            raise ShapeError(f"w must be {layout} with E >= 1 and K = {features} (x's "
                             f"columns), got {fmt_shape(weights)}")
        return [tensor((shape_of(x)[0], outer), str(x.element_type))]


def expert_weights(w: np.ndarray, transposed: bool) -> np.ndarray:
    """``w`` as ``[E, K, N]``."""
    return np.swapaxes(w, 1, 2) if transposed else w


@INTERPRET.register(GroupedMatmulOp)
def _interpret_grouped_matmul(op: GroupedMatmulOp, x: np.ndarray, w: np.ndarray,
                              ids: np.ndarray) -> np.ndarray:
    weights = expert_weights(w, bool(op.attr("transpose_w", False)))
    rows = expert_rows(ids, w.shape[0])
    y = np.zeros((x.shape[0], weights.shape[2]), dtype=x.dtype)
    for expert in np.unique(rows):
        chosen = rows == expert
        y[chosen] = x[chosen] @ weights[expert]
    return y


# ---------------------------------------------------------------- VJP, JVP (SPEC 5.14)


def grouped_matmul(b: Any, x: Tensor, w: Tensor, ids: Tensor, transpose_w: bool) -> Tensor:
    return b.grouped_matmul(x, w, ids, transpose_w=transpose_w or None)


def weight_gradient(b: Any, x: Tensor, dy: Tensor, ids: Tensor, experts: int) -> Tensor:
    """``dw[e] = sum over the tokens i of expert e of outer(x[i], dy[i])``: ``[E, K, N]``."""
    return b.grouped_matmul_backward_weight(x, dy, ids, experts=experts)


@VJP.register(GroupedMatmulOp)
def _vjp_grouped_matmul(ctx: VjpContext, op: GroupedMatmulOp, g: Tensor) -> list[Tensor | None]:
    """dx: ``g @ w[e]^T`` (the other layout); dw: per-expert ``x^T g`` (``g^T x`` for
    ``[E, N, K]`` weights); the ids get none."""
    x, w, ids = ctx.inputs(op)
    transposed = bool(op.attr("transpose_w", False))
    dx = grouped_matmul(ctx.b, g, w, ids, not transposed)
    pair = (g, x) if transposed else (x, g)
    return [dx, weight_gradient(ctx.b, *pair, ids, w.shape[0]), None]


@JVP.register(GroupedMatmulOp)
def _jvp_grouped_matmul(ctx: JvpContext, op: GroupedMatmulOp, tx: Tensor | None,
                        tw: Tensor | None, _tids: Tensor | None) -> list[Tensor | None]:
    """Bilinear: ``gmm(tx, w) + gmm(x, tw)``."""
    x, w, ids = ctx.inputs(op)
    transposed = bool(op.attr("transpose_w", False))
    terms = [None if tx is None else grouped_matmul(ctx.b, tx, w, ids, transposed),
             None if tw is None else grouped_matmul(ctx.b, x, tw, ids, transposed)]
    return [ctx.add(*terms)]


# ---------------------------------------------------------------- batching


def batched_tokens(ctx: VmapContext, x: Tensor, batched: bool) -> Tensor:
    """``x`` lifted to ``[B, M, ...]`` and folded into ``[B * M, ...]``."""
    lifted = ctx.lift(x, batched)
    return lifted.reshape((lifted.shape[0] * lifted.shape[1], *lifted.shape[2:]))


def batched_ids(ctx: VmapContext, ids: Tensor, batched: bool, experts: int | None) -> Tensor:
    """Ids of the folded tokens ``[B * M]``; with ``experts``, as rows of weights folded to
    ``[B * E, ...]`` (example b's ids clamped, then offset by ``b * E``)."""
    lifted = ctx.lift(ids, batched)
    if experts is not None:
        lifted = gather_rows(ctx, lifted, experts)
    return lifted.reshape((lifted.shape[0] * lifted.shape[1],))


@VMAP.register(GroupedMatmulOp)
def _vmap_grouped_matmul(ctx: VmapContext, op: GroupedMatmulOp, xs, batched) -> list[Tensor]:
    """The batch folds into the tokens; batched weights fold into the experts."""
    x, w, ids = xs
    experts = shape_of(op.w.type)[0]
    if batched[1]:
        w = w.reshape((w.shape[0] * w.shape[1], *w.shape[2:]))
    y = grouped_matmul(ctx.b, batched_tokens(ctx, x, batched[0]), w,
                       batched_ids(ctx, ids, batched[2], experts if batched[1] else None),
                       bool(op.attr("transpose_w", False)))
    return [y.reshape((ctx.size, *shape_of(op.result.type)))]


# ---------------------------------------------------------------- lowering

BLOCK_ROWS = 16
"""Rows per block of the expert-sorted tokens: each block is one static matmul. Each
expert's rows are padded to a multiple of it (at most ``E * (BLOCK_ROWS - 1)`` zero rows)."""


@dataclass(frozen=True)
class Routing:
    """The counting sort of the tokens by expert, as i64 tensors."""

    tokens: int
    experts: int
    blocks: int
    counts: SSAValue  # [E] tokens per expert
    first_block: SSAValue  # [E] each expert's first block
    block_expert: SSAValue  # [blocks] each block's expert, -1 when unused
    slot: SSAValue  # [M] each token's row in the sorted, padded order
    source: SSAValue  # [blocks * BLOCK_ROWS] the token at each row, M for padding
    used_blocks: SSAValue  # i64: the blocks in use (those before it)

    @property
    def rows(self) -> int:
        return self.blocks * BLOCK_ROWS


def block_count(tokens: int, experts: int) -> int:
    """An upper bound of ``sum_e ceil(count_e / BLOCK_ROWS)`` (each used block holds at
    least one token).

    >>> block_count(1024, 8), block_count(3, 8)
    (72, 3)
    """
    return max(1, min(tokens // BLOCK_ROWS + experts, tokens))


def scalar_at(s: Any, t: SSAValue, position: SSAValue) -> SSAValue:
    return s.emit(tensor_ops.ExtractOp(t, [position], t.type.element_type))  # type: ignore[attr-defined]


def _put(s: Any, value: SSAValue, t: SSAValue, position: SSAValue) -> SSAValue:
    return s.emit(tensor_ops.InsertOp(value, t, [position]))


def as_index(s: Any, value: SSAValue) -> SSAValue:
    return s.emit(arith.IndexCastOp(value, IndexType()))


def _as_i64(s: Any, value: SSAValue) -> SSAValue:
    return s.emit(arith.IndexCastOp(value, i64))


def ceil_blocks(s: Any, count: SSAValue) -> SSAValue:
    return s.emit(arith.DivSIOp(s.add(count, BLOCK_ROWS - 1), s.scalar(BLOCK_ROWS, i64)))


def fresh(e: Any, shape: list[int], value: int | None = None) -> SSAValue:
    """A new i64 tensor (``Emitter.fresh``): two equal ``linalg.fill``s would be merged by
    CSE, and two loops carrying the one tensor are a read-after-write conflict (at M = E =
    1, where the routing's tensors have one shape)."""
    return e.fresh(shape, "i64", value)


def build_routing(e: Any, ids: SSAValue, experts: int) -> Routing:
    """Three sequential passes (scalar loops over M, E and M): count the tokens of each
    expert, give each expert its blocks, place each token (stable order)."""
    from rlx_mlir.lowering.regions import for_loop

    tokens = shape_of(ids.type)[0]
    blocks = block_count(tokens, experts)

    def expert_of(s: Any, m: SSAValue) -> SSAValue:
        position = index_position(s, scalar_at(s, ids, m))
        return as_index(s, s.min(s.max(position, 0), experts - 1))

    def count(s: Any, m: SSAValue, counts: SSAValue) -> list[SSAValue]:
        ex = expert_of(s, m)
        return [_put(s, s.add(scalar_at(s, counts, ex), 1), counts, ex)]

    counts = for_loop(e, 0, tokens, [fresh(e, [experts], 0)], count)[0]

    def assign_blocks(s: Any, ex: SSAValue, firsts: SSAValue, owners: SSAValue,
                      next_block: SSAValue) -> list[SSAValue]:
        end = s.add(next_block, ceil_blocks(s, scalar_at(s, counts, ex)))
        owner = _as_i64(s, ex)
        owners = for_loop(s, as_index(s, next_block), as_index(s, end), [owners],
                          lambda t, block, o: [_put(t, owner, o, block)])[0]
        return [_put(s, next_block, firsts, ex), owners, end]

    firsts, owners, used_blocks = for_loop(
        e, 0, experts, [fresh(e, [experts]), fresh(e, [blocks], -1), e.scalar(0, i64)],
        assign_blocks)

    def place(s: Any, m: SSAValue, next_row: SSAValue, slot: SSAValue,
              source: SSAValue) -> list[SSAValue]:
        ex = expert_of(s, m)
        row = scalar_at(s, next_row, ex)
        return [_put(s, s.add(row, 1), next_row, ex), _put(s, row, slot, m),
                _put(s, _as_i64(s, m), source, as_index(s, row))]

    first_rows = e.elementwise([firsts], "i64", lambda s, f: s.mul(f, BLOCK_ROWS))
    _, slot, source = for_loop(
        e, 0, tokens, [first_rows, fresh(e, [tokens]),
                       fresh(e, [blocks * BLOCK_ROWS], tokens)], place)
    return Routing(tokens, experts, blocks, counts, firsts, owners, slot, source,
                   used_blocks)


def routing(e: Any, ids: SSAValue, experts: int) -> Routing:
    """:func:`build_routing`, once per block for these ids (forward and gradient ops)."""
    return e.once(("moe-routing", ids, experts), lambda: build_routing(e, ids, experts))


def sorted_rows(e: Any, route: Routing, x: SSAValue) -> SSAValue:
    """``x [M, C]`` in the sorted, padded order ``[rows, C]`` (padding rows are zero)."""
    tokens, columns = shape_of(x.type)
    etype = x.type.element_type  # type: ignore[attr-defined]
    with_zero_row = e.insert_slice(x, e.fill(0, [tokens + 1, columns], etype), [0, 0])
    return lower_row_gather(e, with_zero_row, route.source, 0, [route.rows, columns])


TILE_BYTES = 1 << 19
"""The most bytes of one expert's weight tile ``[K, tile]``: it stays in L2 (1 MB a
core here) while the expert's blocks stream past. At 2048x1024 -> 512 with 8 experts,
tiles of 1 MB took 8.3 ms, of 512 KB 7.6 ms."""


def column_tile(columns: int, tiles_wanted: int, depth: int = 1, itemsize: int = 4) -> int:
    """Columns per task: the largest of 256, 128 and 64 that cuts ``columns`` into at least
    ``tiles_wanted`` tiles whose ``[depth, tile]`` weights fit :data:`TILE_BYTES` (64 when
    none fits); else the smallest of them that divides ``columns``; ``columns`` itself
    when none divides it.

    >>> column_tile(1024, 2, 512), column_tile(1024, 2, 1024), column_tile(100, 2)
    (256, 128, 100)
    >>> column_tile(512, 16, 2048)
    64
    """
    fitting = [t for t in (256, 128, 64) if itemsize * depth * t <= TILE_BYTES] or [64]
    dividing = [t for t in fitting if columns % t == 0]
    for tile in dividing:
        if columns // tile >= tiles_wanted:
            return tile
    return dividing[-1] if dividing else columns


def block_loop(e: Any, lower: SSAValue | int, upper: SSAValue | int, init: SSAValue,
               step: Any) -> SSAValue:
    """``scf.for`` over ``lower <= b < upper`` (i64 values or ints) carrying ``init``;
    ``step(s, b, carried)`` returns the next value, an update of ``carried`` in place.
    Unlike ``regions.for_loop`` it adds no ``materialize_in_destination``: with one around
    a scheduled matmul that accumulates into the carried tensor, One-Shot Bufferize
    reported a read-after-write conflict."""
    from xdsl.dialects import scf

    from rlx_mlir.lowering.regions import index

    region = e.region([IndexType(), init.type], lambda s, b, acc: [step(s, b, acc)],
                      yield_op=scf.YieldOp)
    lower, upper = (index(e, v) if isinstance(v, int) else as_index(e, v)
                    for v in (lower, upper))
    return e.emit(scf.ForOp(lower, upper, index(e, 1), [init], region))


def column_tiles(e: Any, w: SSAValue, width: int, transposed: bool) -> SSAValue:
    """The expert weights as ``[E, N / width, K, width]`` (from ``w [E, K, N]``, or ``[E,
    N, K]`` when ``transposed``): each expert's column tile contiguous, so the block
    matmuls do not read rows 4 KB apart (L1 set conflicts; 9.2 -> 6.9 ms at 2048x512x1024
    with 8 experts, this copy included). One transpose in either layout."""
    experts, rows, cols = shape_of(w.type)
    if transposed:
        return e.transpose(e.reshape(w, [experts, rows // width, width, cols]), [0, 1, 3, 2])
    return e.transpose(e.reshape(w, [experts, rows, cols // width, width]), [0, 2, 1, 3])


def lower_grouped_matmul(e: Any, x: SSAValue, w: SSAValue, ids: SSAValue,
                         transposed: bool) -> SSAValue:
    """``y [M, N]`` for ``w [E, K, N]`` (``[E, N, K]`` when ``transposed``): a forall over
    column tiles of the output, each running through the used blocks in expert order (an
    expert's weight tile stays in cache while its blocks stream past), then the rows read
    back in token order. The weights are copied to contiguous tiles
    (:func:`column_tiles`) when transposed, or when there are several column tiles and at
    least a block of tokens per expert on average; with fewer tokens (decoding) the copy
    of every expert's weights would cost more than the strided reads of the used ones
    (M = 32, K = N = 512, 64 experts: 7.0 ms with the copy)."""
    from rlx_mlir.lowering import forall as F
    from rlx_mlir.lowering.schedules import num_threads

    experts, (tokens, features) = shape_of(w.type)[0], shape_of(x.type)
    columns = shape_of(w.type)[1 if transposed else 2]
    etype = x.type.element_type  # type: ignore[attr-defined]
    if not (tokens and features and columns):  # an empty product: zeros, as x @ w
        return e.fill(0, [tokens, columns], etype)
    route = routing(e, ids, experts)
    xs = sorted_rows(e, route, x)
    width = column_tile(columns, num_threads(), features, BYTES[str(etype)])
    packed = transposed or (columns > width and tokens >= experts * BLOCK_ROWS)
    tiles = column_tiles(e, w, width, transposed) if packed else w

    def weight_tile(s: Any, expert: SSAValue, tile: SSAValue) -> SSAValue:
        if packed:
            part = F.slice_of(s, tiles, [expert, tile, 0, 0], [1, 1, features, width])
        else:
            part = F.slice_of(s, w, [expert, 0, F.index_mul(s, tile, width)],
                              [1, features, width])
        return s.reshape(part, [features, width])

    def column_slab(t: Any, ivs: Any) -> list[tuple[SSAValue, list]]:
        def block(s: Any, b: SSAValue, slab: SSAValue) -> SSAValue:
            row = F.index_mul(s, b, BLOCK_ROWS)
            lhs = F.slice_of(s, xs, [row, 0], [BLOCK_ROWS, features])
            expert = as_index(s, scalar_at(s, route.block_expert, b))
            return F.insert_at(s, s.matmul(lhs, weight_tile(s, expert, ivs[0])), slab, [row, 0])

        slab = block_loop(t, 0, route.used_blocks, t.empty([route.rows, width], etype),
                          block)
        return [(slab, [0, F.index_mul(t, ivs[0], width)])]

    ys = F.forall(e, [columns // width], [e.empty([route.rows, columns], etype)],
                  column_slab)[0]
    return lower_row_gather(e, ys, route.slot, 0, [route.tokens, columns])


@LOWER.register(GroupedMatmulOp)
def _lower_grouped_matmul(op: GroupedMatmulOp, e: Any, x: SSAValue, w: SSAValue,
                          ids: SSAValue) -> SSAValue:
    return lower_grouped_matmul(e, x, w, ids, bool(op.attr("transpose_w", False)))


OPS = [GroupedMatmulOp]
