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

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from rlx_mlir.dialects.attention import (
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
from rlx_mlir.dialects.base import RlxOp, ShapeError, require
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
    lowered_probs,
    merge_groups,
    row_reduce,
    scaled_scores,
    with_rows,
)
from rlx_mlir.rules import LOWER  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.lowering.emitter import Emitter


@dataclass
class LoweredRecompute:
    """The forward replayed in the lowered module; each quantity emitted on first use."""

    e: Emitter
    ops: GroupedOperands
    dy: SSAValue  # [B, S, Hkv, G, D]

    @cached_property
    def qk(self) -> SSAValue:
        """Unscaled ``Q K^T`` [B, Hkv, G, S, S_kv]."""
        return SCORES_CONTRACTION.emit(self.e, self.ops.q, self.ops.k)

    @cached_property
    def probs(self) -> SSAValue:
        return lowered_probs(self.e, self.ops, self.qk)

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

        def body(s: Emitter, ds: SSAValue, qk: SSAValue) -> SSAValue:
            if cfg.softcap is not None:
                t = s.tanh(s.div(scaled_scores(s, cfg, qk), cfg.softcap))
                ds = s.mul(ds, s.sub(1.0, s.mul(t, t)))
            return s.mul(ds, cfg.scale)

        return with_rows(self.e, [self.d_logits, self.qk], [], body)


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


@LOWER.register(AttentionBackwardOp)
def _lower_attention_backward(op: AttentionBackwardOp, e: Emitter, q: SSAValue, k: SSAValue,
                              v: SSAValue, dy: SSAValue,
                              mask: SSAValue | None = None) -> SSAValue:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    ops = GroupedOperands.of(e, cfg, q, k, v, mask)
    recompute = LoweredRecompute(e, ops, GroupedOperands.queries(e, cfg, dy))
    return LOWERED_GRADIENTS[op.attr("wrt")](recompute)
