"""Attention backward op (SPEC 3.7, 5.10): one gradient of ``rlx.attention`` per op.

``wrt`` picks the operand (``q``, ``k``, ``v``, or the additive mask for
``mask_kind = "bias"``); every forward attribute is carried and honoured, including
``score_scale`` and ``softcap`` (a fix of SPEC 9.3), grouped-query heads (9.5) and
the bias gradient (9.4)::

    %dk = rlx.attention_backward %q, %k, %v, %dy {num_heads = 4 : i64,
        num_kv_heads = 2 : i64, head_dim = 8 : i64, mask_kind = "causal", wrt = "k"}
        : (tensor<2x5x32xf32>, tensor<2x7x16xf32>, tensor<2x7x16xf32>,
           tensor<2x5x32xf32>) -> tensor<2x7x16xf32>

Math per (batch, query head), with ``P`` recomputed by the forward helpers::

    dV = P^T dO   (summed over the query heads of each kv head)
    dP = dO V^T ;  dS = P * (dP - rowsum(dP * P))      (= dBias)
    dS' = dS * (1 - tanh^2(s / softcap))               (dS' = dS without softcap)
    dQ = scale * dS' K ;  dK = scale * dS'^T Q         (dK summed per kv head)

Dropped keys have ``P = 0``, so they (and fully masked rows) get zero gradient.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from rlx_mlir.dialects.attention import (
    CUSTOM_KEEP_THRESHOLD,
    KEY_PADDING_KINDS,
    AttentionConfig,
    AttentionOp,
    attention_logits,
    attention_mask,
    attention_scores,
    check_attention_operands,
    expand_kv_heads,
    masked_softmax,
    merge_heads,
    reduce_kv_heads,
    split_heads,
)
from rlx_mlir.dialects.base import RlxOp, ShapeError, require, shape_of
from rlx_mlir.rules import INTERPRET

# ---------------------------------------------------------------- numpy math


@dataclass(frozen=True)
class AttentionRecompute:
    """The forward pass replayed per head, with the output cotangent split into heads.

    ``k_heads`` and ``v_heads`` are expanded to ``num_heads`` heads (GQA).
    """

    cfg: AttentionConfig
    q_heads: np.ndarray
    k_heads: np.ndarray
    v_heads: np.ndarray
    dy_heads: np.ndarray
    probs: np.ndarray

    @classmethod
    def of(cls, cfg: AttentionConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray,
           dy: np.ndarray, mask: np.ndarray | None = None) -> AttentionRecompute:
        """Recompute ``P`` from the operands of ``rlx.attention``."""
        q_heads = split_heads(q, cfg.num_heads)
        k_heads = expand_kv_heads(split_heads(k, cfg.num_kv_heads), cfg.group)
        v_heads = expand_kv_heads(split_heads(v, cfg.num_kv_heads), cfg.group)
        logits = attention_logits(cfg, q_heads, k_heads, mask)
        probs = masked_softmax(logits, attention_mask(cfg, q.shape[1], k.shape[1], mask))
        return cls(cfg, q_heads, k_heads, v_heads, split_heads(dy, cfg.num_heads), probs)

    def d_logits(self) -> np.ndarray:
        """``dS = P * (dP - rowsum(dP * P))`` with ``dP = dO V^T``: the bias gradient."""
        d_probs = self.dy_heads @ np.swapaxes(self.v_heads, -1, -2)
        row = (d_probs * self.probs).sum(axis=-1, keepdims=True)
        return self.probs * (d_probs - row)

    def d_scores(self) -> np.ndarray:
        """``dS`` through the softcap: times ``1 - tanh^2(s / cap)`` (SPEC 9.3)."""
        d_logits = self.d_logits()
        cap = self.cfg.softcap
        if cap is None:
            return d_logits
        scores = attention_scores(self.q_heads, self.k_heads, self.cfg.scale)
        t = np.tanh(scores / scores.dtype.type(cap))
        return d_logits * (1 - t * t)

    def scale(self) -> np.floating:
        return self.q_heads.dtype.type(self.cfg.scale)


def _grad_q(r: AttentionRecompute) -> np.ndarray:
    return merge_heads(r.scale() * (r.d_scores() @ r.k_heads))


def _grad_k(r: AttentionRecompute) -> np.ndarray:
    dk = r.scale() * (np.swapaxes(r.d_scores(), -1, -2) @ r.q_heads)
    return merge_heads(reduce_kv_heads(dk, r.cfg.group))


def _grad_v(r: AttentionRecompute) -> np.ndarray:
    dv = np.swapaxes(r.probs, -1, -2) @ r.dy_heads
    return merge_heads(reduce_kv_heads(dv, r.cfg.group))


def _grad_bias(r: AttentionRecompute) -> np.ndarray:
    return r.d_logits()


GRADIENTS: dict[str, Callable[[AttentionRecompute], np.ndarray]] = {
    "q": _grad_q,
    "k": _grad_k,
    "v": _grad_v,
    "bias": _grad_bias,
}
"""``wrt`` -> the gradient it selects."""

WRT_OPERAND: dict[str, int] = {"q": 0, "k": 1, "v": 2, "bias": 4}
"""``wrt`` -> the operand (of the backward op) whose type the result has."""


def attention_backward(cfg: AttentionConfig, wrt: str, q: np.ndarray, k: np.ndarray,
                       v: np.ndarray, dy: np.ndarray,
                       mask: np.ndarray | None = None) -> np.ndarray:
    """The gradient of ``<dy, attention(q, k, v, mask)>`` with respect to ``wrt``.

    >>> cfg = AttentionConfig(1, 1, 2)
    >>> x = np.ones((1, 3, 2))
    >>> attention_backward(cfg, "v", x, x, x, x).tolist()  # uniform P: each key gets 1/3
    [[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]]
    """
    return GRADIENTS[wrt](AttentionRecompute.of(cfg, q, k, v, dy, mask))


# ---------------------------------------------------------------- the op


def _check_wrt(cfg: AttentionConfig, wrt: str) -> None:
    if wrt not in GRADIENTS:
        raise ShapeError(f"unknown wrt '{wrt}' (expected one of {', '.join(GRADIENTS)})")
    if wrt == "bias" and cfg.mask_kind != "bias":
        raise ShapeError(f"wrt 'bias' needs mask_kind 'bias', not '{cfg.mask_kind}'")


@irdl_op_definition
class AttentionBackwardOp(RlxOp):
    """Gradient of ``rlx.attention`` with respect to q, k, v or the bias (``wrt``).

    Operands are the forward operands with the output cotangent ``dy`` (q's type)
    inserted before the mask: ``q, k, v, dy[, mask]``. The result has the type of
    the ``wrt`` operand. Every forward attribute means what it means on
    ``rlx.attention``. ``wrt = "bias"`` (mask_kind bias only) gives ``dS``, the
    gradient of the pre-softmax logits.

    Example::

        %db = rlx.attention_backward %q, %k, %v, %dy, %bias {num_heads = 2 : i64,
            head_dim = 4 : i64, mask_kind = "bias", wrt = "bias"}
            : (tensor<1x3x8xf32>, tensor<1x5x8xf32>, tensor<1x5x8xf32>,
               tensor<1x3x8xf32>, tensor<1x2x3x5xf32>) -> tensor<1x2x3x5xf32>
    """

    name = "rlx.attention_backward"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    dy = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        **AttentionOp.ATTRS,
        "wrt": "string, required: " + "|".join(GRADIENTS) + " (bias needs mask_kind bias)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        cfg = AttentionConfig.from_attrs(attrs)
        wrt = require(attrs, "wrt", str)
        _check_wrt(cfg, wrt)
        if len(types) < 4:
            raise ShapeError(f"expected operands q, k, v, dy[, mask], got {len(types)}")
        q, k, v, dy, *mask = types
        check_attention_operands(cfg, [q, k, v, *mask])
        if dy != q:
            raise ShapeError(f"dy must have the type of q ({q}), got {dy}")
        return [types[WRT_OPERAND[wrt]]]


@INTERPRET.register(AttentionBackwardOp)
def _interpret_attention_backward(op: AttentionBackwardOp, q: np.ndarray, k: np.ndarray,
                                  v: np.ndarray, dy: np.ndarray,
                                  mask: np.ndarray | None = None) -> np.ndarray:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    with np.errstate(all="ignore"):
        return attention_backward(cfg, op.attr("wrt"), q, k, v, dy, mask)


OPS = [AttentionBackwardOp]


# ---------------------------------------------------------------- LOWER rules
# The forward's head-grouped views and contractions (see the LOWER section of
# dialects/attention.py); each ``wrt`` emits only what its gradient needs.

from functools import cached_property  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

from xdsl.ir import SSAValue  # noqa: E402

from rlx_mlir.dialects.attention import (  # noqa: E402
    GROUPED_HEADS,
    GROUPED_SCORES,
    KEYS_CONTRACTION,
    KV_HEADS,
    QUERIES_CONTRACTION,
    SCORES_CONTRACTION,
    GroupedOperands,
    HeadTile,
    block_operands,
    forall_builders,
    head_chunks,
    head_config,
    lowered_probs,
    lowers_per_head,
    merge_groups,
    probs_shape,
    row_blocks,
    row_reduce,
    same_attention,
    scaled_scores,
    shared_per_head_forward,
    shared_probs,
    with_rows,
)
from rlx_mlir.rules import LOWER  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.lowering.emitter import Emitter


@dataclass
class LoweredRecompute:
    """The forward replayed in the lowered module; each quantity emitted on first use and
    shared by the gradient ops of one attention (and with its forward op)."""

    e: Emitter
    cfg: AttentionConfig
    operands: tuple[SSAValue, SSAValue, SSAValue, SSAValue | None]  # q, k, v, mask
    dy_flat: SSAValue
    forward: tuple[GroupedOperands, SSAValue | None, SSAValue] | None = None
    """(operands, ``Q K^T`` or None without softcap, ``P``) when already computed."""

    @cached_property
    def _forward(self) -> tuple[GroupedOperands, SSAValue | None, SSAValue]:
        if self.forward is not None:
            return self.forward
        return shared_probs(self.e, self.cfg, *self.operands)

    @property
    def ops(self) -> GroupedOperands:
        return self._forward[0]

    @property
    def qk(self) -> SSAValue | None:
        """Unscaled ``Q K^T`` [B, Hkv, G, S, S_kv] (may be None when there is no softcap)."""
        return self._forward[1]

    @property
    def probs(self) -> SSAValue:
        return self._forward[2]

    @cached_property
    def dy(self) -> SSAValue:
        """``dO`` [B, S, Hkv, G, D]."""
        return GroupedOperands.queries(self.e, self.cfg, self.dy_flat)

    @cached_property
    def d_logits(self) -> SSAValue:
        """``dS = P * (dP - rowsum(dP * P))`` with ``dP = dO V^T``."""
        d_probs = SCORES_CONTRACTION.emit(self.e, self.dy, self.ops.v)
        row = row_reduce(self.e, [d_probs, self.probs], 0.0,
                         lambda s, dp, p, acc: s.add(acc, s.mul(dp, p)))
        return with_rows(self.e, [self.probs, d_probs], [row],
                         lambda s, p, dp, r: s.mul(p, s.sub(dp, r)))

    @cached_property
    def scaled_d_scores(self) -> SSAValue:
        """``score_scale * dS'``: dS through the softcap, ready for both contractions."""
        cfg = self.ops.cfg
        if cfg.softcap is None:
            return with_rows(self.e, [self.d_logits], [], lambda s, ds: s.mul(ds, cfg.scale))

        def body(s: Emitter, ds: SSAValue, qk: SSAValue) -> SSAValue:
            t = s.tanh(s.div(scaled_scores(s, cfg, qk), cfg.softcap))
            return s.mul(s.mul(ds, s.sub(1.0, s.mul(t, t))), cfg.scale)

        return with_rows(self.e, [self.d_logits, self.qk], [], body)  # type: ignore[list-item]


def _lower_grad_q(r: LoweredRecompute) -> SSAValue:
    dq = KEYS_CONTRACTION.emit(r.e, r.scaled_d_scores, r.ops.k)
    return merge_groups(r.e, dq, GROUPED_HEADS)


def _lower_grad_k(r: LoweredRecompute) -> SSAValue:
    dk = QUERIES_CONTRACTION.emit(r.e, r.scaled_d_scores, r.ops.q)
    return merge_groups(r.e, dk, KV_HEADS)


def _lower_grad_v(r: LoweredRecompute) -> SSAValue:
    return merge_groups(r.e, QUERIES_CONTRACTION.emit(r.e, r.probs, r.dy), KV_HEADS)


def _lower_grad_bias(r: LoweredRecompute) -> SSAValue:
    return merge_groups(r.e, r.d_logits, GROUPED_SCORES)


LOWERED_GRADIENTS: dict[str, Callable[[LoweredRecompute], SSAValue]] = {
    "q": _lower_grad_q,
    "k": _lower_grad_k,
    "v": _lower_grad_v,
    "bias": _lower_grad_bias,
}
"""``wrt`` -> the lowering of the gradient it selects."""


def _sibling_wrts(op: AttentionBackwardOp) -> list[str]:
    """The ``wrt`` of every gradient op in ``op``'s block with ``op``'s operands (one
    per-head loop computes them all)."""
    block = op.parent_block()
    siblings = [o for o in block.ops if o.name == op.name] if block is not None else [op]
    wrts = [o.attr("wrt") for o in siblings
            if list(o.operands) == list(op.operands) and same_attention(op, o)]
    return list(dict.fromkeys(wrts))


def head_backward(e: Emitter, ops: GroupedOperands, dy: SSAValue, probs: SSAValue,
                  wrts: Sequence[str]) -> dict[str, SSAValue]:
    """The gradients ``wrts`` of one kv head's group (``dy`` [1, S, G*D], ``probs``
    [1, 1, G, S, S_kv]), row block by row block (:class:`RowBlock`): dq rows per block,
    dk and dv summed over the blocks into the keys each block sees."""
    fb = forall_builders()
    b, s, hkv, g, d = shape_of(ops.q.type)
    skv = shape_of(ops.k.type)[1]
    dtype = ops.q.type.element_type  # type: ignore[attr-defined]
    inits = {"q": lambda: e.empty([b, s, hkv * g * d], dtype),
             "k": lambda: e.fill(0.0, [b, skv, hkv, d], dtype),
             "v": lambda: e.fill(0.0, [b, skv, hkv, d], dtype),
             "bias": lambda: e.empty([b, hkv * g, s, skv], dtype)}
    grads = {w: inits[w]() for w in wrts}
    for block in row_blocks(ops.cfg, s, skv):
        if block.keys == 0:  # rows that see no key: dq = 0 there, nothing else
            if "q" in grads:
                zeros = e.fill(0.0, [b, block.rows, hkv * g * d], dtype)
                grads["q"] = fb.insert_at_unless_whole(e, zeros, grads["q"], [0, block.start, 0])
            continue
        part = block_operands(e, ops, block)
        qk = SCORES_CONTRACTION.emit(e, part.q, part.k) if ops.cfg.softcap is not None else None
        p = fb.slice_unless_whole(e, probs, [0, 0, 0, block.start, 0],
                                  [b, hkv, g, block.rows, block.keys])
        rows = fb.slice_unless_whole(e, dy, [0, block.start, 0], [b, block.rows, hkv * g * d])
        r = LoweredRecompute(e, ops.cfg, (part.q, part.k, part.v, part.mask), rows,
                             (part, qk, p))
        if "q" in wrts:
            grads["q"] = fb.insert_at_unless_whole(e, LOWERED_GRADIENTS["q"](r), grads["q"], [0, block.start, 0])
        if "k" in wrts:
            grads["k"] = _accumulate_keys(e, r.scaled_d_scores, part.q, grads["k"], block.keys)
        if "v" in wrts:
            grads["v"] = _accumulate_keys(e, r.probs, r.dy, grads["v"], block.keys)
        if "bias" in wrts:
            grads["bias"] = fb.insert_at_unless_whole(e, LOWERED_GRADIENTS["bias"](r), grads["bias"],
                                         [0, 0, block.start, 0])
    for w in ("k", "v"):
        if w in grads:
            grads[w] = merge_groups(e, grads[w], KV_HEADS)
    return grads


def _accumulate_keys(e: Emitter, scores: SSAValue, rows: SSAValue, acc: SSAValue,
                     keys: int) -> SSAValue:
    """``acc[:, :keys] += scores^T rows`` summed over the group (dk, dv of one block)."""
    fb = forall_builders()
    b, _, hkv, d = shape_of(acc.type)
    part = fb.slice_unless_whole(e, acc, [0, 0, 0, 0], [b, keys, hkv, d])
    summed = QUERIES_CONTRACTION.emit(e, scores, rows, part)
    return fb.insert_at_unless_whole(e, summed, acc, [0, 0, 0, 0])


def per_head_backward(e: Emitter, cfg: AttentionConfig, q: SSAValue, k: SSAValue,
                      v: SSAValue, dy: SSAValue, mask: SSAValue | None,
                      wrts: Sequence[str]) -> dict[str, SSAValue]:
    """The gradients ``wrts`` by one forall over (batch, kv head), reading the forward's
    ``P`` per head group (the forward op's loop wrote it)."""
    _, probs = shared_per_head_forward(e, cfg, q, k, v, mask)
    assert probs is not None, "the per-head forward was lowered without its probabilities"
    full = {"q": q, "k": k, "v": v, "bias": mask}
    dtype = q.type.element_type  # type: ignore[attr-defined]
    inits = [e.empty(shape_of(full[w].type), dtype) for w in wrts]  # type: ignore[union-attr]
    slices = probs_shape(cfg, q, k)
    slices[:2] = [1, 1]

    def body(t: Emitter, ivs: Sequence[SSAValue]) -> list[tuple[SSAValue, list]]:
        tile = HeadTile.at(t, cfg, ivs)
        ops = GroupedOperands.of(t, head_config(cfg), *tile.operands(t, q, k, v, mask))
        p = forall_builders().slice_of(t, probs, tile.probs_offsets(), slices)
        grads = head_backward(t, ops, tile.queries(t, dy), p, wrts)
        offsets = {"q": tile.query_offsets, "k": tile.kv_offsets, "v": tile.kv_offsets,
                   "bias": lambda: tile.bias_offsets(t)}
        return [(grads[w], offsets[w]()) for w in wrts]

    results = forall_builders().chunked_forall(
        e, head_chunks(), [shape_of(q.type)[0], cfg.num_kv_heads], inits, body)
    return dict(zip(wrts, results, strict=True))


@LOWER.register(AttentionBackwardOp)
def _lower_attention_backward(op: AttentionBackwardOp, e: Emitter, q: SSAValue, k: SSAValue,
                              v: SSAValue, dy: SSAValue,
                              mask: SSAValue | None = None) -> SSAValue:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    if lowers_per_head(op):
        grads = e.once(("attention-per-head-grads", cfg, q, k, v, dy, mask),
                       lambda: per_head_backward(e, cfg, q, k, v, dy, mask, _sibling_wrts(op)))
        return grads[op.attr("wrt")]
    recompute = e.once(("attention-recompute", cfg, q, k, v, dy, mask),
                       lambda: LoweredRecompute(e, cfg, (q, k, v, mask), dy))
    recompute.e = e  # what is not shared yet is emitted before this op
    return LOWERED_GRADIENTS[op.attr("wrt")](recompute)


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# Forward mode through two dedicated ops, so jvp-of-grad (HVPs) stays native:
#   rlx.attention_jvp            the tangent of rlx.attention
#   rlx.attention_backward_jvp   the tangent of one rlx.attention_backward gradient
# Per (batch, query head), with s = scale Q K^T, g = softcap'(s) = 1 - tanh^2(s / cap)
# (1 without softcap) and g' = -2 tanh(s / cap) g / cap (0 without softcap):
#   ts = scale (tQ K^T + Q tK^T) ;  tL = g ts (+ tBias) ;  tP = P (tL - rowsum(P tL))
#   tO = tP V + P tV
# and, with dP = dO V^T, r = rowsum(dP P), dL = P (dP - r), dS' = g dL:
#   tdP = tdO V^T + dO tV^T ;  tr = rowsum(tdP P + dP tP)
#   tdL = tP (dP - r) + P (tdP - tr)  (= tdBias) ;  tdS' = g tdL + g' ts dL
#   tdQ = scale (tdS' K + dS' tK) ;  tdK = scale (tdS'^T Q + dS'^T tQ) ;  tdV = tP^T dO + P^T tdO
# Dropped keys have P = 0 and finite tL, so their tangents are exactly 0.


from xdsl.irdl import var_operand_def  # noqa: E402

from rlx_mlir.dialects.attention import (  # noqa: E402
    Contraction,
    bias_tangent,
    fold_attention_batch,
)
from rlx_mlir.rules import JVP, VJP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.builder import Builder, Tensor
    from rlx_mlir.transforms.autodiff import VjpContext
    from rlx_mlir.transforms.jvp import JvpContext


@dataclass
class TangentRecompute:
    """:class:`AttentionRecompute` with the tangents of q, k, v, dy split into heads
    (``t_bias``: the bias tangent, None for other mask kinds)."""

    r: AttentionRecompute
    tq_heads: np.ndarray
    tk_heads: np.ndarray
    tv_heads: np.ndarray
    tdy_heads: np.ndarray
    t_bias: np.ndarray | None

    @classmethod
    def of(cls, cfg: AttentionConfig, primals: Sequence[np.ndarray],
           tangents: Sequence[np.ndarray], mask: np.ndarray | None = None,
           t_bias: np.ndarray | None = None) -> TangentRecompute:
        """``primals`` = q, k, v, dy and ``tangents`` their tangents."""
        tq, tk, tv, tdy = tangents

        def kv(x: np.ndarray) -> np.ndarray:
            return expand_kv_heads(split_heads(x, cfg.num_kv_heads), cfg.group)

        return cls(AttentionRecompute.of(cfg, *primals, mask), split_heads(tq, cfg.num_heads),
                   kv(tk), kv(tv), split_heads(tdy, cfg.num_heads), t_bias)

    def _tanh(self) -> np.ndarray:
        r = self.r
        scores = attention_scores(r.q_heads, r.k_heads, r.cfg.scale)
        return np.tanh(scores / scores.dtype.type(r.cfg.softcap))

    def slope(self) -> np.ndarray | float:
        """``g = softcap'(s)``."""
        if self.r.cfg.softcap is None:
            return 1.0
        t = self._tanh()
        return 1 - t * t

    def curvature(self) -> np.ndarray | float:
        """``g' = softcap''(s)``."""
        cap = self.r.cfg.softcap
        if cap is None:
            return 0.0
        t = self._tanh()
        return -2 * t * (1 - t * t) / t.dtype.type(cap)

    @cached_property
    def t_scores(self) -> np.ndarray:
        r = self.r
        return attention_scores(self.tq_heads, r.k_heads, r.cfg.scale) + attention_scores(
            r.q_heads, self.tk_heads, r.cfg.scale)

    @cached_property
    def t_probs(self) -> np.ndarray:
        t_logits = self.slope() * self.t_scores
        if self.t_bias is not None:
            t_logits = t_logits + self.t_bias
        p = self.r.probs
        return p * (t_logits - (p * t_logits).sum(axis=-1, keepdims=True))

    def t_output(self) -> np.ndarray:
        r = self.r
        return merge_heads(self.t_probs @ r.v_heads + r.probs @ self.tv_heads)

    @cached_property
    def t_d_logits(self) -> np.ndarray:
        r, p, tp = self.r, self.r.probs, self.t_probs
        d_probs = r.dy_heads @ np.swapaxes(r.v_heads, -1, -2)
        t_d_probs = (self.tdy_heads @ np.swapaxes(r.v_heads, -1, -2)
                     + r.dy_heads @ np.swapaxes(self.tv_heads, -1, -2))
        row = (d_probs * p).sum(axis=-1, keepdims=True)
        t_row = (t_d_probs * p + d_probs * tp).sum(axis=-1, keepdims=True)
        return tp * (d_probs - row) + p * (t_d_probs - t_row)

    def t_d_scores(self) -> np.ndarray:
        """``tdS' = g tdL + g' ts dL``."""
        return (self.slope() * self.t_d_logits
                + self.curvature() * self.t_scores * self.r.d_logits())


def _tangent_grad_q(t: TangentRecompute) -> np.ndarray:
    r = t.r
    return merge_heads(r.scale() * (t.t_d_scores() @ r.k_heads + r.d_scores() @ t.tk_heads))


def _tangent_grad_k(t: TangentRecompute) -> np.ndarray:
    r = t.r
    dk = r.scale() * (np.swapaxes(t.t_d_scores(), -1, -2) @ r.q_heads
                      + np.swapaxes(r.d_scores(), -1, -2) @ t.tq_heads)
    return merge_heads(reduce_kv_heads(dk, r.cfg.group))


def _tangent_grad_v(t: TangentRecompute) -> np.ndarray:
    r = t.r
    dv = (np.swapaxes(t.t_probs, -1, -2) @ r.dy_heads
          + np.swapaxes(r.probs, -1, -2) @ t.tdy_heads)
    return merge_heads(reduce_kv_heads(dv, r.cfg.group))


TANGENT_GRADIENTS: dict[str, Callable[[TangentRecompute], np.ndarray]] = {
    "q": _tangent_grad_q,
    "k": _tangent_grad_k,
    "v": _tangent_grad_v,
    "bias": lambda t: t.t_d_logits,
}
"""``wrt`` -> the tangent of the gradient it selects."""


def attention_jvp(cfg: AttentionConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                  tangents: Sequence[np.ndarray], mask: np.ndarray | None = None,
                  t_bias: np.ndarray | None = None) -> np.ndarray:
    """The tangent of ``attention(q, k, v, mask)`` along ``tangents`` = (tq, tk, tv)."""
    zeros = np.zeros_like(q)
    t = TangentRecompute.of(cfg, (q, k, v, zeros), (*tangents, zeros), mask, t_bias)
    return t.t_output()


def attention_backward_jvp(cfg: AttentionConfig, wrt: str, primals: Sequence[np.ndarray],
                           tangents: Sequence[np.ndarray], mask: np.ndarray | None = None,
                           t_bias: np.ndarray | None = None) -> np.ndarray:
    """The tangent of ``attention_backward(q, k, v, dy, mask)[wrt]`` along (tq, tk, tv, tdy)."""
    return TANGENT_GRADIENTS[wrt](TangentRecompute.of(cfg, primals, tangents, mask, t_bias))


# ---- the ops

JVP_MASK_OPERANDS: dict[str, tuple[str, ...]] = {
    "custom": ("mask",), "causal_padding": ("mask",), "bias": ("mask", "t_bias")}
"""mask_kind -> the operands after the tangents (a bias mask comes with its tangent)."""


def _check_tangent_operands(cfg: AttentionConfig, names: str, types: Sequence[TensorType],
                            count: int) -> None:
    """``types`` = ``count`` primals, their ``count`` tangents, then the mask operands."""
    want = JVP_MASK_OPERANDS.get(cfg.mask_kind, ())
    if len(types) != 2 * count + len(want):
        operands = ", ".join([*names.split(","), *(f"t{n}" for n in names.split(",")), *want])
        raise ShapeError(f"mask_kind '{cfg.mask_kind}' takes operands {operands}, "
                         f"got {len(types)}")
    primals, tangents, masks = types[:count], types[count:2 * count], types[2 * count:]
    check_attention_operands(cfg, [*primals[:3], *masks[:1]])
    for name, p, t in zip(names.split(","), primals, tangents, strict=True):
        if t != p:
            raise ShapeError(f"t{name} must have the type of {name} ({p}), got {t}")
    if len(masks) == 2 and masks[1] != masks[0]:
        raise ShapeError(f"t_bias must have the type of the bias ({masks[0]}), got {masks[1]}")


@irdl_op_definition
class AttentionJvpOp(RlxOp):
    """Forward-mode tangent of ``rlx.attention`` (exact): operands ``q, k, v, tq, tk,
    tv``, then ``mask`` (custom, bias) and ``t_bias`` (bias: the mask's tangent). The
    result has q's type; every attribute means what it means on ``rlx.attention``.

    Example::

        %t = rlx.attention_jvp %q, %k, %v, %tq, %tk, %tv {num_heads = 2 : i64,
            head_dim = 4 : i64, mask_kind = "causal"} : (tensor<1x3x8xf32>,
            tensor<1x5x8xf32>, tensor<1x5x8xf32>, tensor<1x3x8xf32>, tensor<1x5x8xf32>,
            tensor<1x5x8xf32>) -> tensor<1x3x8xf32>
    """

    name = "rlx.attention_jvp"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    tq = operand_def(TensorType)
    tk = operand_def(TensorType)
    tv = operand_def(TensorType)
    masks = var_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = AttentionOp.ATTRS

    @classmethod
    def infer(cls, types, attrs, out):
        _check_tangent_operands(AttentionConfig.from_attrs(attrs), "q,k,v", types, 3)
        return [types[0]]


@irdl_op_definition
class AttentionBackwardJvpOp(RlxOp):
    """Forward-mode tangent of ``rlx.attention_backward`` (exact): operands ``q, k, v,
    dy, tq, tk, tv, tdy``, then ``mask`` (custom, bias) and ``t_bias`` (bias). The
    result has the type of the ``wrt`` operand, as on ``rlx.attention_backward``.

    Example::

        %t = rlx.attention_backward_jvp %q, %k, %v, %dy, %tq, %tk, %tv, %tdy
            {num_heads = 1 : i64, head_dim = 4 : i64, wrt = "k"} : (tensor<1x3x4xf32>,
            tensor<1x5x4xf32>, tensor<1x5x4xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>,
            tensor<1x5x4xf32>, tensor<1x5x4xf32>, tensor<1x3x4xf32>) -> tensor<1x5x4xf32>
    """

    name = "rlx.attention_backward_jvp"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    dy = operand_def(TensorType)
    tq = operand_def(TensorType)
    tk = operand_def(TensorType)
    tv = operand_def(TensorType)
    tdy = operand_def(TensorType)
    masks = var_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = AttentionBackwardOp.ATTRS

    @classmethod
    def infer(cls, types, attrs, out):
        cfg = AttentionConfig.from_attrs(attrs)
        wrt = require(attrs, "wrt", str)
        _check_wrt(cfg, wrt)
        _check_tangent_operands(cfg, "q,k,v,dy", types, 4)
        if types[3] != types[0]:
            raise ShapeError(f"dy must have the type of q ({types[0]}), got {types[3]}")
        return [types[8 if wrt == "bias" else WRT_OPERAND[wrt]]]


@INTERPRET.register(AttentionJvpOp)
def _interpret_attention_jvp(op: AttentionJvpOp, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                             *rest: np.ndarray) -> np.ndarray:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    with np.errstate(all="ignore"):
        return attention_jvp(cfg, q, k, v, rest[:3], *rest[3:])


@INTERPRET.register(AttentionBackwardJvpOp)
def _interpret_attention_backward_jvp(op: AttentionBackwardJvpOp,
                                      *operands: np.ndarray) -> np.ndarray:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    with np.errstate(all="ignore"):
        return attention_backward_jvp(cfg, op.attr("wrt"), operands[:4], operands[4:8],
                                      *operands[8:])


OPS += [AttentionJvpOp, AttentionBackwardJvpOp]


# ---- JVP rules


@JVP.register(AttentionBackwardOp)
def _jvp_attention_backward(ctx: JvpContext, op: AttentionBackwardOp, tq: Tensor | None,
                            tk: Tensor | None, tv: Tensor | None, tdy: Tensor | None,
                            *t_mask: Tensor | None) -> list[Tensor | None]:
    """Linear in dy: a tangent of dy alone is attention_backward(q, k, v, tdy); otherwise
    one rlx.attention_backward_jvp."""
    q, k, v, dy, *mask = ctx.inputs(op)
    attrs = op.py_attrs()
    bias_moves = attrs.get("mask_kind") == "bias" and t_mask[0] is not None
    if tq is None and tk is None and tv is None and not bias_moves:
        return [None if tdy is None else ctx.b.attention_backward(q, k, v, tdy, *mask, **attrs)]
    tangents = [ctx.or_zeros(t, x) for t, x in zip((tq, tk, tv, tdy), (q, k, v, dy),
                                                    strict=True)]
    return [ctx.b.attention_backward_jvp(q, k, v, dy, *tangents, *mask,
                                         *bias_tangent(ctx, op, t_mask), **attrs)]


@VJP.register(AttentionJvpOp)
def _vjp_attention_jvp(ctx: VjpContext, op: AttentionJvpOp, g: Tensor) -> list[Tensor | None]:
    """The op is ``J(x) t`` (x = q, k, v[, bias]): linear in t with transpose
    attention_backward, and ``d/dx <g, J(x) t> = H t`` (the Hessian of ``<g, attention>``
    is symmetric) = attention_backward_jvp along t with ``tdy = 0``."""
    q, k, v, tq, tk, tv, *masks = ctx.inputs(op)
    attrs = op.py_attrs()
    zeros = ctx.zeros(g.shape, g.dtype)

    def transpose(wrt: str) -> Tensor:
        return ctx.b.attention_backward(q, k, v, g, *masks[:1], **attrs, wrt=wrt)

    def curvature(wrt: str) -> Tensor:
        return ctx.b.attention_backward_jvp(q, k, v, g, tq, tk, tv, zeros, *masks, **attrs,
                                            wrt=wrt)

    wrts = ["q", "k", "v"]
    kind = attrs.get("mask_kind", "none")
    mask_grads = [curvature("bias"), transpose("bias")] if kind == "bias" else [None] * len(masks)
    return [*map(curvature, wrts), *map(transpose, wrts), *mask_grads]


# ---------------------------------------------------------------- batching rules (SPEC 6.2)
# Every operand leads with attention's batch B and the results are per example, so the
# vmap batch folds into B exactly (dbias too is per element of the folded batch).

VMAP.register(AttentionBackwardOp, AttentionJvpOp, AttentionBackwardJvpOp)(fold_attention_batch)


# ---------------------------------------------------------------- LOWER rules of the jvp ops
# The formulas above on the head-grouped views; a sum of two contractions accumulates the
# second into the first (one linalg.generic each, no extra add).


def contract_into(e: Emitter, c: Contraction, a: SSAValue, b: SSAValue,
                  acc: SSAValue) -> SSAValue:
    """``acc + a * b`` under contraction ``c``."""
    return e.generic([a, b], [acc], [c.a_map, c.b_map, c.out_map], c.iterators,
                     lambda s, x, y, o: s.add(o, s.mul(x, y)))


def contract_sum(e: Emitter, c: Contraction, first: tuple[SSAValue, SSAValue],
                 second: tuple[SSAValue, SSAValue]) -> SSAValue:
    """``c(*first) + c(*second)``."""
    return contract_into(e, c, *second, c.emit(e, *first))


@dataclass
class LoweredTangents:
    """The tangent formulas in the lowered module; each quantity emitted on first use.

    ``ops``/``t``: grouped primals and tangents (``t.mask`` is the bias tangent);
    ``dy``/``tdy``: grouped output cotangent and its tangent (None for attention_jvp).
    """

    e: Emitter
    ops: GroupedOperands
    t: GroupedOperands
    dy: SSAValue | None = None
    tdy: SSAValue | None = None

    @property
    def cfg(self) -> AttentionConfig:
        return self.ops.cfg

    @cached_property
    def qk(self) -> SSAValue:
        return SCORES_CONTRACTION.emit(self.e, self.ops.q, self.ops.k)

    @cached_property
    def probs(self) -> SSAValue:
        return lowered_probs(self.e, self.ops, self.qk)

    @cached_property
    def t_qk(self) -> SSAValue:
        """Unscaled ``tQ K^T + Q tK^T``."""
        return contract_sum(self.e, SCORES_CONTRACTION, (self.t.q, self.ops.k),
                            (self.ops.q, self.t.k))

    def _tanh(self, s: Emitter, qk: SSAValue) -> SSAValue:
        return s.tanh(s.div(scaled_scores(s, self.cfg, qk), self.cfg.softcap))

    @cached_property
    def t_probs(self) -> SSAValue:
        cfg, bias = self.cfg, [self.t.mask] if self.cfg.mask_kind == "bias" else []

        def t_logit(s: Emitter, tqk: SSAValue, qk: SSAValue, *t_bias: SSAValue) -> SSAValue:
            tl = s.mul(tqk, cfg.scale)
            if cfg.softcap is not None:
                th = self._tanh(s, qk)
                tl = s.mul(tl, s.sub(1.0, s.mul(th, th)))
            return s.add(tl, t_bias[0]) if t_bias else tl

        t_logits = with_rows(self.e, [self.t_qk, self.qk, *bias], [], t_logit)
        row = row_reduce(self.e, [self.probs, t_logits], 0.0,
                         lambda s, p, tl, acc: s.add(acc, s.mul(p, tl)))
        return with_rows(self.e, [self.probs, t_logits], [row],
                         lambda s, p, tl, r: s.mul(p, s.sub(tl, r)))

    @cached_property
    def d_probs(self) -> SSAValue:
        return SCORES_CONTRACTION.emit(self.e, self.dy, self.ops.v)

    @cached_property
    def d_row(self) -> SSAValue:
        return row_reduce(self.e, [self.d_probs, self.probs], 0.0,
                          lambda s, dp, p, acc: s.add(acc, s.mul(dp, p)))

    @cached_property
    def d_logits(self) -> SSAValue:
        return with_rows(self.e, [self.probs, self.d_probs], [self.d_row],
                         lambda s, p, dp, r: s.mul(p, s.sub(dp, r)))

    @cached_property
    def t_d_logits(self) -> SSAValue:
        """``tdL = tP (dP - r) + P (tdP - tr)``."""
        t_dp = contract_sum(self.e, SCORES_CONTRACTION, (self.tdy, self.ops.v),
                            (self.dy, self.t.v))
        full = [self.t_probs, self.d_probs, self.probs, t_dp]
        t_row = row_reduce(self.e, full, 0.0, lambda s, tp, dp, p, tdp, acc: s.add(
            acc, s.add(s.mul(tdp, p), s.mul(dp, tp))))

        def body(s: Emitter, tp: SSAValue, dp: SSAValue, p: SSAValue, tdp: SSAValue,
                 r: SSAValue, tr: SSAValue) -> SSAValue:
            return s.add(s.mul(tp, s.sub(dp, r)), s.mul(p, s.sub(tdp, tr)))

        return with_rows(self.e, full, [self.d_row, t_row], body)

    @cached_property
    def scaled_d_scores(self) -> SSAValue:
        """``scale * g dL``."""
        def body(s: Emitter, dl: SSAValue, qk: SSAValue) -> SSAValue:
            if self.cfg.softcap is not None:
                th = self._tanh(s, qk)
                dl = s.mul(dl, s.sub(1.0, s.mul(th, th)))
            return s.mul(dl, self.cfg.scale)

        return with_rows(self.e, [self.d_logits, self.qk], [], body)

    @cached_property
    def t_scaled_d_scores(self) -> SSAValue:
        """``scale * (g tdL + g' ts dL)``."""
        cfg = self.cfg

        def body(s: Emitter, tdl: SSAValue, dl: SSAValue, qk: SSAValue,
                 tqk: SSAValue) -> SSAValue:
            if cfg.softcap is not None:
                th = self._tanh(s, qk)
                g = s.sub(1.0, s.mul(th, th))
                curvature = s.mul(s.mul(th, g), -2.0 / cfg.softcap)
                ts = s.mul(tqk, cfg.scale)
                tdl = s.add(s.mul(tdl, g), s.mul(s.mul(curvature, ts), dl))
            return s.mul(tdl, cfg.scale)

        return with_rows(self.e, [self.t_d_logits, self.d_logits, self.qk, self.t_qk], [], body)


def _lower_tangent_q(t: LoweredTangents) -> SSAValue:
    dq = contract_sum(t.e, KEYS_CONTRACTION, (t.t_scaled_d_scores, t.ops.k),
                      (t.scaled_d_scores, t.t.k))
    return merge_groups(t.e, dq, GROUPED_HEADS)


def _lower_tangent_k(t: LoweredTangents) -> SSAValue:
    dk = contract_sum(t.e, QUERIES_CONTRACTION, (t.t_scaled_d_scores, t.ops.q),
                      (t.scaled_d_scores, t.t.q))
    return merge_groups(t.e, dk, KV_HEADS)


def _lower_tangent_v(t: LoweredTangents) -> SSAValue:
    dv = contract_sum(t.e, QUERIES_CONTRACTION, (t.t_probs, t.dy), (t.probs, t.tdy))
    return merge_groups(t.e, dv, KV_HEADS)


LOWERED_TANGENTS: dict[str, Callable[[LoweredTangents], SSAValue]] = {
    "q": _lower_tangent_q,
    "k": _lower_tangent_k,
    "v": _lower_tangent_v,
    "bias": lambda t: merge_groups(t.e, t.t_d_logits, GROUPED_SCORES),
}
"""``wrt`` -> the lowering of the tangent of the gradient it selects."""


def _grouped(e: Emitter, cfg: AttentionConfig, primals: Sequence[SSAValue],
             tangents: Sequence[SSAValue], masks: Sequence[SSAValue]) -> LoweredTangents:
    """Grouped views of q, k, v (+ dy) and their tangents, mask and bias tangent."""
    mask, t_bias = (list(masks) + [None, None])[:2]
    ops = GroupedOperands.of(e, cfg, *primals[:3], mask)
    t = GroupedOperands.of(e, cfg, *tangents[:3], t_bias)
    dys = [GroupedOperands.queries(e, cfg, x) for x in (*primals[3:], *tangents[3:])]
    return LoweredTangents(e, ops, t, *dys)


@LOWER.register(AttentionJvpOp)
def _lower_attention_jvp(op: AttentionJvpOp, e: Emitter, *operands: SSAValue) -> SSAValue:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    t = _grouped(e, cfg, operands[:3], operands[3:6], operands[6:])
    out = contract_sum(e, KEYS_CONTRACTION, (t.t_probs, t.ops.v), (t.probs, t.t.v))
    return merge_groups(e, out, GROUPED_HEADS)


@LOWER.register(AttentionBackwardJvpOp)
def _lower_attention_backward_jvp(op: AttentionBackwardJvpOp, e: Emitter,
                                  *operands: SSAValue) -> SSAValue:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    t = _grouped(e, cfg, operands[:4], operands[4:8], operands[8:])
    return LOWERED_TANGENTS[op.attr("wrt")](t)


# ---------------------------------------------------------------- JVP rules of the jvp ops
# Third derivatives (jvp of an HVP, jvp of jvp) without a third dedicated op: the primal
# function of a jvp op (rlx.attention, or one rlx.attention_backward gradient) is emitted
# as primitive rlx ops (matmul, softmax, where, tanh, reductions, shape ops) in a block and
# differentiated by the JVP machinery once (giving the jvp op's own value) and once more
# (its tangent). Every primitive already lowers, interprets, batches and has a JVP rule.
# Masks: dropped keys (and -inf logits) become ``_DROPPED`` before the softmax and their
# probabilities are then selected to exactly 0, so fully masked rows stay finite (NaN-free).

_DROPPED = -1e30


def primitive_heads(b: Builder, cfg: AttentionConfig, x: Tensor, heads: int) -> Tensor:
    """``[B, S, heads*D] -> [B, Hq, S, D]``: query head h reads head ``h // group``."""
    d, hq = cfg.head_dim, cfg.num_heads
    n, s, _ = x.shape
    x = b.transpose(b.reshape(x, (n, s, heads, d)), perm=[0, 2, 1, 3])
    if heads == hq:
        return x
    x = b.expand(b.reshape(x, (n, heads, 1, s, d)), (n, heads, hq // heads, s, d))
    return b.reshape(x, (n, hq, s, d))


@dataclass
class PrimitiveAttention:
    """``rlx.attention``'s math as primitive rlx ops on per-head views ``[B, Hq, S, D]``
    (k and v repeated for the query heads of their kv head)."""

    b: Builder
    cfg: AttentionConfig
    q: Tensor
    k: Tensor
    v: Tensor
    mask: Tensor | None

    @classmethod
    def of(cls, b: Builder, cfg: AttentionConfig, q: Tensor, k: Tensor, v: Tensor,
           mask: Tensor | None = None) -> PrimitiveAttention:
        kv = cfg.num_kv_heads
        return cls(b, cfg, primitive_heads(b, cfg, q, cfg.num_heads),
                   primitive_heads(b, cfg, k, kv), primitive_heads(b, cfg, v, kv), mask)

    def heads(self, x: Tensor, heads: int) -> Tensor:
        return primitive_heads(self.b, self.cfg, x, heads)

    def merge(self, x: Tensor, heads: int) -> Tensor:
        """Adjoint of :meth:`heads`: ``[B, Hq, S, D] -> [B, S, heads*D]``, groups summed."""
        n, hq, s, d = x.shape
        if heads != hq:
            x = self.b.reduce_sum(self.b.reshape(x, (n, heads, hq // heads, s, d)), axes=[2])
        return self.b.reshape(self.b.transpose(x, perm=[0, 2, 1, 3]), (n, s, heads * d))

    @cached_property
    def scores(self) -> Tensor:
        return (self.q @ self.k.mT) * self.cfg.scale

    @cached_property
    def capped(self) -> Tensor:
        """``tanh(s / softcap)``."""
        return self.b.tanh(self.scores / self.cfg.softcap)

    def _scalar(self, value: float) -> Tensor:
        return self.b.full((), value, self.q.dtype)

    def _keep(self) -> Tensor | None:
        """The mask_kind's keep predicate, broadcastable to the scores (None: keep all)."""
        n, _, s, skv = self.scores.shape
        kind, mask = self.cfg.mask_kind, self.mask
        positional = None
        if kind in ("causal", "sliding_window", "causal_padding"):
            cfg = replace(self.cfg, mask_kind="causal") if kind == "causal_padding" else self.cfg
            positional = self.b.constant(attention_mask(cfg, s, skv))
        if kind not in KEY_PADDING_KINDS or mask is None:
            return positional
        if mask.dtype != "i1":
            mask = self.b.compare(mask, self._scalar(CUSTOM_KEEP_THRESHOLD), predicate="ge")
        keys = self.b.reshape(mask, (n, 1, 1, skv))
        return keys if positional is None else self.b.where(positional, keys, positional)

    @cached_property
    def probs(self) -> Tensor:
        """``P`` with dropped keys (and ``-inf`` logits) exactly 0, masked rows all 0."""
        cap, b = self.cfg.softcap, self.b
        logits = self.scores if cap is None else self.capped * cap
        if self.cfg.mask_kind == "bias":
            logits = logits + self.mask
        keep, inf = self._keep(), self._scalar(-math.inf)
        if keep is not None:
            logits = b.where(keep, logits, inf)
        alive = b.compare(logits, inf, predicate="ne")
        p = b.softmax(b.where(alive, logits, self._scalar(_DROPPED)), axis=-1)
        return b.where(alive, p, self._scalar(0.0))

    def output(self) -> Tensor:
        return self.merge(self.probs @ self.v, self.cfg.num_heads)

    def d_logits(self, dy: Tensor) -> Tensor:
        """``dS = P (dP - rowsum(dP P))``, ``dP = dO V^T`` (``dy`` in heads)."""
        d_probs = dy @ self.v.mT
        return self.probs * (d_probs - (d_probs * self.probs).sum(axis=-1, keepdims=True))

    def scaled_d_scores(self, dy: Tensor) -> Tensor:
        """``scale * dS'``: dS through the softcap."""
        ds = self.d_logits(dy)
        if self.cfg.softcap is not None:
            ds = ds * (1.0 - self.capped * self.capped)
        return ds * self.cfg.scale


PRIMITIVE_GRADIENTS: dict[str, Callable[[PrimitiveAttention, Tensor], Tensor]] = {
    "q": lambda a, dy: a.merge(a.scaled_d_scores(dy) @ a.k, a.cfg.num_heads),
    "k": lambda a, dy: a.merge(a.scaled_d_scores(dy).mT @ a.q, a.cfg.num_kv_heads),
    "v": lambda a, dy: a.merge(a.probs.mT @ dy, a.cfg.num_kv_heads),
    "bias": PrimitiveAttention.d_logits,
}
"""``wrt`` -> the gradient it selects, from primitive ops (``dy`` in heads)."""


def _primal_as_primitives(b: Builder, op: RlxOp, xs: Sequence[Tensor]) -> Tensor:
    """The primal function of a jvp op on ``q, k, v[, dy][, mask]``, as primitive ops."""
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    if isinstance(op, AttentionJvpOp):
        return PrimitiveAttention.of(b, cfg, *xs).output()
    q, k, v, dy, *mask = xs
    a = PrimitiveAttention.of(b, cfg, q, k, v, *mask)
    return PRIMITIVE_GRADIENTS[op.attr("wrt")](a, a.heads(dy, cfg.num_heads))


def _jvp_op_as_primitives(b: Builder, op: RlxOp, operands: Sequence[Tensor]) -> Tensor:
    """The result of jvp op ``op`` on ``operands``: the JVP of its primal function."""
    from rlx_mlir.transforms.jvp import jvp_block

    n = 4 if isinstance(op, AttentionBackwardJvpOp) else 3
    primals, tangents, masks = operands[:n], operands[n:2 * n], operands[2 * n:]
    primals = [*primals, *masks[:1]]
    t_mask = list(masks[1:]) or [None] * len(masks)  # the bias tangent (custom: none)
    fn = b.region([x.type for x in primals], lambda fb, *xs: _primal_as_primitives(fb, op, xs))
    (out,), (t_out,) = jvp_block(b, fn.block, primals, [*tangents, *t_mask])
    return t_out if t_out is not None else b.full(out.shape, 0.0, out.dtype)


@JVP.register(AttentionJvpOp, AttentionBackwardJvpOp)
def _jvp_of_jvp_op(ctx: JvpContext, op: RlxOp, *tangents: Tensor | None) -> list[Tensor | None]:
    """Second-order tangent: the op re-derived from primitive ops, differentiated again."""
    from rlx_mlir.transforms.jvp import jvp_block

    inputs = ctx.inputs(op)
    fn = ctx.b.region([x.type for x in inputs],
                      lambda fb, *xs: _jvp_op_as_primitives(fb, op, xs))
    return jvp_block(ctx.b, fn.block, inputs, list(tangents))[1]


# ---------------------------------------------------------------- VJP rules of the gradient ops
# Reverse over reverse (a gradient penalty, a Hessian by grad of grad): the op's function is
# emitted as primitive ops, as above, and differentiated by the reverse walk. A custom
# key-padding mask gets no cotangent, as on rlx.attention.


@VJP.register(AttentionBackwardOp, AttentionBackwardJvpOp)
def _vjp_by_primitives(ctx: VjpContext, op: RlxOp, g: Tensor) -> list[Tensor | None]:
    """The cotangents of the op re-derived from primitive ops, differentiated in reverse."""
    from rlx_mlir.transforms.autodiff import vjp_block

    inputs = ctx.inputs(op)
    as_primitives = (_primal_as_primitives if isinstance(op, AttentionBackwardOp)
                     else _jvp_op_as_primitives)
    fn = ctx.b.region([x.type for x in inputs], lambda fb, *xs: as_primitives(fb, op, xs))
    grads = vjp_block(ctx.b, fn.block, inputs, [g])
    masks = len(op.masks) if isinstance(op, AttentionBackwardJvpOp) else len(op.operands) - 4
    if masks and op.attr("mask_kind", "none") != "bias":
        grads[len(grads) - masks:] = [None] * masks
    return grads
