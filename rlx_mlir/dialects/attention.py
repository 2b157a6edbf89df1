"""Attention family: multi-head scaled dot-product attention (SPEC 2.1.14, DESIGN 4.1).

One op, ``rlx.attention``, on the rank-3 layout ``[B, S, H*D]`` with grouped-query
attention (``num_kv_heads`` divides ``num_heads``) and five mask kinds::

    %o = rlx.attention %q, %k, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64,
        head_dim = 8 : i64, mask_kind = "causal"}
        : (tensor<2x5x32xf32>, tensor<2x7x16xf32>, tensor<2x7x16xf32>) -> tensor<2x5x32xf32>

The numpy helpers below (:class:`AttentionConfig`, :func:`split_heads`,
:func:`attention_scores`, :func:`attention_mask`, :func:`masked_softmax`,
:func:`attention_probs` ...) are the one statement of the math; the backward ops
reuse them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    dtype_of,
    expect_float,
    expect_rank,
    expect_same_dtype,
    fmt_shape,
    optional,
    require,
    shape_of,
)
from rlx_mlir.rules import INTERPRET, VJP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext

# ---------------------------------------------------------------- attributes

MASK_KINDS: dict[str, str] = {
    "none": "every query sees every key",
    "causal": "query qi sees keys ki <= (S_kv - S) + qi (last query aligned with last key)",
    "sliding_window": "query qi sees keys abs_q - window <= ki <= abs_q, abs_q = S_kv - S + qi",
    "custom": "mask operand [B, S_kv]: key-padding mask (i1 true, or float >= 0.5, keeps)",
    "causal_padding": "causal and a key-padding mask operand [B, S_kv] (as custom) together",
    "bias": "mask operand [B, Hq, S, S_kv]: added to the scores",
}
MASK_OPERAND_KINDS = ("custom", "causal_padding", "bias")
KEY_PADDING_KINDS = ("custom", "causal_padding")
"""Kinds whose mask operand is a ``[B, S_kv]`` key-padding mask."""
CAUSAL_KINDS = ("causal", "causal_padding")
"""Kinds that drop the keys after each query (row blocks skip them)."""
CUSTOM_KEEP_THRESHOLD = 0.5


@dataclass(frozen=True)
class AttentionConfig:
    """The checked attributes of an attention op, defaults resolved.

    >>> AttentionConfig.from_attrs({"num_heads": 4, "head_dim": 16}).scale
    0.25
    """

    num_heads: int
    num_kv_heads: int
    head_dim: int
    mask_kind: str = "none"
    window: int | None = None
    scale: float = 1.0
    softcap: float | None = None

    @property
    def group(self) -> int:
        """Query heads per kv head (``Hq / Hkv``)."""
        return self.num_heads // self.num_kv_heads

    @property
    def takes_mask(self) -> bool:
        return self.mask_kind in MASK_OPERAND_KINDS

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> AttentionConfig:
        """Validate attribute values (ShapeError on bad ones) and resolve defaults."""
        heads = _positive(attrs, "num_heads", require(attrs, "num_heads", int))
        kv_heads = _positive(attrs, "num_kv_heads", optional(attrs, "num_kv_heads", int, heads))
        if heads % kv_heads:
            raise ShapeError(f"num_kv_heads {kv_heads} does not divide num_heads {heads}")
        head_dim = _positive(attrs, "head_dim", require(attrs, "head_dim", int))
        kind = optional(attrs, "mask_kind", str, "none")
        if kind not in MASK_KINDS:
            raise ShapeError(
                f"unknown mask_kind '{kind}' (expected one of {', '.join(MASK_KINDS)})"
            )
        scale = optional(attrs, "score_scale", float, 1.0 / math.sqrt(head_dim))
        return cls(heads, kv_heads, head_dim, kind, _window(attrs, kind), scale,
                   _softcap(attrs))


def _positive(attrs: Mapping[str, Any], name: str, value: int) -> int:
    if value <= 0:
        raise ShapeError(f"attribute '{name}' must be positive, got {value}")
    return value


def _window(attrs: Mapping[str, Any], kind: str) -> int | None:
    """``window`` is required for sliding_window (>= 0) and rejected otherwise."""
    if kind != "sliding_window":
        if "window" in attrs:
            raise ShapeError(f"attribute 'window' only applies to mask_kind 'sliding_window', "
                             f"not '{kind}'")
        return None
    window = require(attrs, "window", int)
    if window < 0:
        raise ShapeError(f"attribute 'window' must be >= 0, got {window}")
    return window


def _softcap(attrs: Mapping[str, Any]) -> float | None:
    cap = optional(attrs, "softcap", float, None)
    if cap is not None and not cap > 0:
        raise ShapeError(f"attribute 'softcap' must be > 0, got {cap}")
    return cap


# ---------------------------------------------------------------- operand checks


@dataclass(frozen=True)
class AttentionDims:
    """Sizes read off the operands: batch, query length, key/value length."""

    batch: int
    q_len: int
    kv_len: int


def check_attention_operands(cfg: AttentionConfig, types: Sequence[TensorType]) -> AttentionDims:
    """Check q, k, v (and the mask) against ``cfg``; ShapeError on any mismatch."""
    _check_operand_count(cfg, len(types))
    q, k, v = types[:3]
    expect_same_dtype([q, k, v], "q, k and v")
    expect_float(q, "q")
    (bq, s, wq), (bk, skv, wk), (bv, sv, wv) = (
        expect_rank(t, (3,), name) for t, name in ((q, "q"), (k, "k"), (v, "v"))
    )
    if not bq == bk == bv:
        raise ShapeError(f"batch sizes differ: q {bq}, k {bk}, v {bv}")
    if skv != sv:
        raise ShapeError(f"k and v lengths differ: k has {skv} keys, v has {sv}")
    _check_width("q", wq, cfg.num_heads, cfg.head_dim, "num_heads")
    _check_width("k", wk, cfg.num_kv_heads, cfg.head_dim, "num_kv_heads")
    _check_width("v", wv, cfg.num_kv_heads, cfg.head_dim, "num_kv_heads")
    dims = AttentionDims(bq, s, skv)
    if cfg.takes_mask:
        MASK_OPERAND_RULES[cfg.mask_kind](cfg, dims, types[3], dtype_of(q))
    return dims


def _check_operand_count(cfg: AttentionConfig, count: int) -> None:
    if cfg.takes_mask and count != 4:
        raise ShapeError(f"mask_kind '{cfg.mask_kind}' needs a mask operand (q, k, v, mask)")
    if not cfg.takes_mask and count != 3:
        raise ShapeError(
            f"mask_kind '{cfg.mask_kind}' takes no mask operand, got {count} operands"
        )


def _check_width(what: str, width: int, heads: int, head_dim: int, heads_name: str) -> None:
    if width != heads * head_dim:
        raise ShapeError(
            f"{what} width {width} is not {heads_name} * head_dim = {heads} * {head_dim}"
        )


def _check_mask_shape(mask: TensorType, want: tuple[int, ...], kind: str) -> None:
    if shape_of(mask) != want:
        raise ShapeError(
            f"'{kind}' mask must have shape {fmt_shape(want)}, got {fmt_shape(shape_of(mask))}"
        )


def _check_custom_mask(cfg: AttentionConfig, dims: AttentionDims, mask: TensorType,
                       dtype: str) -> None:
    _check_mask_shape(mask, (dims.batch, dims.kv_len), cfg.mask_kind)
    if dtype_of(mask) not in ("i1", dtype):
        raise ShapeError(f"'{cfg.mask_kind}' mask must be i1 or {dtype} (the dtype of q), "
                         f"got {mask}")


def _check_bias_mask(cfg: AttentionConfig, dims: AttentionDims, mask: TensorType,
                     dtype: str) -> None:
    _check_mask_shape(mask, (dims.batch, cfg.num_heads, dims.q_len, dims.kv_len), "bias")
    if dtype_of(mask) != dtype:
        raise ShapeError(f"'bias' mask must be {dtype} (the dtype of q), got {mask}")


MASK_OPERAND_RULES: dict[str, Callable[[AttentionConfig, AttentionDims, TensorType, str], None]]
MASK_OPERAND_RULES = {"custom": _check_custom_mask, "causal_padding": _check_custom_mask,
                      "bias": _check_bias_mask}


# ---------------------------------------------------------------- numpy math


def split_heads(x: np.ndarray, heads: int) -> np.ndarray:
    """``[B, S, H*D] -> [B, H, S, D]``.

    >>> split_heads(np.zeros((2, 5, 12)), 3).shape
    (2, 3, 5, 4)
    """
    b, s, width = x.shape
    return x.reshape(b, s, heads, width // heads).transpose(0, 2, 1, 3)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """``[B, H, S, D] -> [B, S, H*D]`` (inverse of :func:`split_heads`)."""
    b, h, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, s, h * d)


def expand_kv_heads(x: np.ndarray, group: int) -> np.ndarray:
    """``[B, Hkv, S, D] -> [B, Hkv*group, S, D]``: query head h reads kv head h // group."""
    return np.repeat(x, group, axis=1)


def reduce_kv_heads(dx: np.ndarray, group: int) -> np.ndarray:
    """Adjoint of :func:`expand_kv_heads`: sum each group of query heads."""
    b, h, s, d = dx.shape
    return dx.reshape(b, h // group, group, s, d).sum(axis=2)


def attention_scores(q_heads: np.ndarray, k_heads: np.ndarray, scale: float) -> np.ndarray:
    """``scale * Q K^T`` per head: ``[B, H, S, D] x [B, H, S_kv, D] -> [B, H, S, S_kv]``."""
    return (q_heads @ np.swapaxes(k_heads, -1, -2)) * q_heads.dtype.type(scale)


def apply_softcap(scores: np.ndarray, cap: float | None) -> np.ndarray:
    """``cap * tanh(s / cap)``, or ``s`` unchanged when ``cap`` is None."""
    if cap is None:
        return scores
    c = scores.dtype.type(cap)
    return c * np.tanh(scores / c)


def _keep_all(cfg: AttentionConfig, s: int, skv: int, mask: np.ndarray | None) -> np.ndarray:
    return np.ones((s, skv), dtype=bool)


def _key_and_query_positions(s: int, skv: int) -> tuple[np.ndarray, np.ndarray]:
    """Absolute query positions ``S_kv - S + qi`` (column) and key positions (row)."""
    abs_q = (skv - s) + np.arange(s)[:, None]
    return abs_q, np.arange(skv)[None, :]


def _keep_causal(cfg: AttentionConfig, s: int, skv: int, mask: np.ndarray | None) -> np.ndarray:
    abs_q, ki = _key_and_query_positions(s, skv)
    return ki <= abs_q


def _keep_window(cfg: AttentionConfig, s: int, skv: int, mask: np.ndarray | None) -> np.ndarray:
    abs_q, ki = _key_and_query_positions(s, skv)
    return (ki <= abs_q) & (ki >= abs_q - cfg.window)


def _keep_custom(cfg: AttentionConfig, s: int, skv: int, mask: np.ndarray | None) -> np.ndarray:
    keys = mask if mask.dtype == np.bool_ else mask >= CUSTOM_KEEP_THRESHOLD
    return keys[:, None, None, :]  # [B, 1, 1, S_kv]: every head and query


def _keep_causal_padding(cfg: AttentionConfig, s: int, skv: int,
                         mask: np.ndarray | None) -> np.ndarray:
    return _keep_causal(cfg, s, skv, mask) & _keep_custom(cfg, s, skv, mask)


KEEP_RULES: dict[str, Callable[[AttentionConfig, int, int, np.ndarray | None], np.ndarray]] = {
    "none": _keep_all,
    "causal": _keep_causal,
    "sliding_window": _keep_window,
    "custom": _keep_custom,
    "causal_padding": _keep_causal_padding,
    "bias": _keep_all,
}


def attention_mask(cfg: AttentionConfig, s: int, skv: int,
                   mask: np.ndarray | None = None) -> np.ndarray:
    """Boolean keep-matrix (True = the key is attended), broadcastable to [B, H, S, S_kv].

    >>> cfg = AttentionConfig(1, 1, 4, "causal")
    >>> attention_mask(cfg, 2, 3).astype(int).tolist()
    [[1, 1, 0], [1, 1, 1]]
    """
    return KEEP_RULES[cfg.mask_kind](cfg, s, skv, mask)


def masked_softmax(logits: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Softmax over the last axis where dropped entries get probability exactly 0.

    Entries equal to ``-inf`` are dropped too; a row with nothing kept is all zeros.
    """
    keep = np.broadcast_to(keep, logits.shape) & (logits != -np.inf)
    shifted = np.where(keep, logits, -np.inf)
    row_max = shifted.max(axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0)
    weights = np.where(keep, np.exp(shifted - row_max), 0)
    total = weights.sum(axis=-1, keepdims=True)
    return np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)


def attention_logits(cfg: AttentionConfig, q_heads: np.ndarray, k_heads: np.ndarray,
                     mask: np.ndarray | None = None) -> np.ndarray:
    """Pre-softmax logits ``[B, Hq, S, S_kv]``: scale, softcap, then the bias (if any).

    ``k_heads`` already has ``num_heads`` heads (see :func:`expand_kv_heads`).
    """
    logits = apply_softcap(attention_scores(q_heads, k_heads, cfg.scale), cfg.softcap)
    return logits + mask if cfg.mask_kind == "bias" else logits


def attention_probs(cfg: AttentionConfig, q: np.ndarray, k: np.ndarray,
                    mask: np.ndarray | None = None) -> np.ndarray:
    """Probabilities ``P [B, Hq, S, S_kv]`` from q ``[B, S, Hq*D]`` and k ``[B, S_kv, Hkv*D]``."""
    q_heads = split_heads(q, cfg.num_heads)
    k_heads = expand_kv_heads(split_heads(k, cfg.num_kv_heads), cfg.group)
    logits = attention_logits(cfg, q_heads, k_heads, mask)
    return masked_softmax(logits, attention_mask(cfg, q.shape[1], k.shape[1], mask))


def attention_forward(cfg: AttentionConfig, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                      mask: np.ndarray | None = None) -> np.ndarray:
    """``O = P V`` in the ``[B, S, Hq*D]`` layout."""
    v_heads = expand_kv_heads(split_heads(v, cfg.num_kv_heads), cfg.group)
    return merge_heads(attention_probs(cfg, q, k, mask) @ v_heads)


# ---------------------------------------------------------------- the op


@irdl_op_definition
class AttentionOp(RlxOp):
    """Multi-head scaled dot-product attention with grouped-query heads.

    Per batch b and query head h (reading kv head ``h // (Hq/Hkv)``):
    ``s = score_scale * Q K^T``; ``s = softcap * tanh(s / softcap)`` when softcap is
    set; ``s += mask[b, h]`` for ``bias``; the keys dropped by ``mask_kind`` get
    probability exactly 0; ``O = softmax(s) V``. A query row whose every key is
    masked (e.g. causal with S > S_kv, or a custom mask of all pads) outputs zeros.
    With S != S_kv the queries are aligned to the end of the keys, as when decoding with
    a KV cache: query i sits at position ``p = S_kv - S + i``, causal keeps keys
    ``<= p`` and sliding_window keys ``p - window .. p`` (PyTorch's ``is_causal`` aligns
    to the start instead; the two agree when S = S_kv).

    Example::

        %o = rlx.attention %q, %k, %v, %m {num_heads = 2 : i64, head_dim = 4 : i64,
            mask_kind = "custom"} : (tensor<1x3x8xf32>, tensor<1x5x8xf32>,
            tensor<1x5x8xf32>, tensor<1x5xi1>) -> tensor<1x3x8xf32>
    """

    name = "rlx.attention"
    q = operand_def(TensorType)
    k = operand_def(TensorType)
    v = operand_def(TensorType)
    mask = opt_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "num_heads": "i64, required: query heads Hq",
        "num_kv_heads": "i64, default num_heads: key/value heads Hkv, must divide Hq",
        "head_dim": "i64, required: D (q width Hq*D, k/v width Hkv*D)",
        "mask_kind": "string, default none: " + "|".join(MASK_KINDS),
        "window": ("i64 >= 0, required iff mask_kind = sliding_window: query i keeps keys "
                   "p-window..p, p = S_kv - S + i (window + 1 keys, causal)"),
        "score_scale": "f32, default 1/sqrt(head_dim)",
        "softcap": "f32 > 0, default none: scores become softcap*tanh(s/softcap)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        check_attention_operands(AttentionConfig.from_attrs(attrs), types)
        return [types[0]]


@INTERPRET.register(AttentionOp)
def _interpret_attention(op: AttentionOp, q: np.ndarray, k: np.ndarray, v: np.ndarray,
                         mask: np.ndarray | None = None) -> np.ndarray:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    with np.errstate(all="ignore"):
        return attention_forward(cfg, q, k, v, mask)


OPS = [AttentionOp]


# ---------------------------------------------------------------- VJP rules (SPEC 5.10)


@VJP.register(AttentionOp)
def _vjp_attention(ctx: VjpContext, op: AttentionOp, g: Tensor) -> list[Tensor | None]:
    """dq, dk, dv: one ``rlx.attention_backward`` each, every forward attribute kept.

    A ``bias`` mask gets ``wrt = "bias"`` (dS); a ``custom`` key-padding mask gets none.
    """
    q, k, v, *mask = ctx.inputs(op)
    attrs = op.py_attrs()

    def grad(wrt: str) -> Tensor:
        return ctx.b.attention_backward(q, k, v, g, *mask, **attrs, wrt=wrt)

    grads: list[Tensor | None] = [grad("q"), grad("k"), grad("v")]
    if mask:
        grads.append(grad("bias") if attrs.get("mask_kind") == "bias" else None)
    return grads


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# tO = dP V + P tV through the dedicated rlx.attention_jvp (backward/attention.py), so
# forward-over-reverse (HVPs) stays native; a tangent of v alone is attention(q, k, tv).

from rlx_mlir.rules import JVP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext


def bias_tangent(ctx: JvpContext, op: RlxOp, t_mask: Sequence[Tensor | None]) -> list[Tensor]:
    """The ``t_bias`` operand of the jvp ops: ``[tangent or zeros]`` for a bias mask, else
    ``[]`` (a custom key mask is piecewise constant: no tangent)."""
    if op.attr("mask_kind", "none") != "bias":
        return []
    return [ctx.or_zeros(t_mask[0], ctx.inputs(op)[-1])]


@JVP.register(AttentionOp)
def _jvp_attention(ctx: JvpContext, op: AttentionOp, tq: Tensor | None, tk: Tensor | None,
                   tv: Tensor | None, *t_mask: Tensor | None) -> list[Tensor | None]:
    q, k, v, *mask = ctx.inputs(op)
    attrs = op.py_attrs()
    bias_moves = attrs.get("mask_kind") == "bias" and t_mask[0] is not None
    if tq is None and tk is None and not bias_moves:
        return [None if tv is None else ctx.b.attention(q, k, tv, *mask, **attrs)]
    tangents = [ctx.or_zeros(t, x) for t, x in zip((tq, tk, tv), (q, k, v), strict=True)]
    return [ctx.b.attention_jvp(q, k, v, *tangents, *mask, *bias_tangent(ctx, op, t_mask),
                                **attrs)]


# ---------------------------------------------------------------- batching rules (SPEC 6.2)
# RLX panics here; we fold the vmap batch into attention's own batch axis B (the ops
# are per-example in B, so folding is exact).


def fold_attention_batch(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                         batched: Sequence[bool]) -> list[Tensor]:
    """``[Bv, B, ...] -> [Bv*B, ...]`` for every operand (q, k, v, dy, tangents, the
    custom ``[B, S_kv]`` and bias ``[B, Hq, S, S_kv]`` masks all lead with B), re-emit,
    unfold. Shared operands are broadcast first."""
    folded = [ctx.fold(x) for x in ctx.lift_all(xs, batched)]
    return [ctx.unfold(r) for r in ctx.emit_like(op, folded)]


VMAP.register(AttentionOp)(fold_attention_batch)


# ---------------------------------------------------------------- LOWER rules
# Heads are viewed grouped, q as [B, S, Hkv, G, D] (G = Hq / Hkv) and k, v as
# [B, S_kv, Hkv, D], so query head (kh, g) reading kv head kh is a plain dimension (the
# GQA map h // G needs no division). Scores, probabilities and their gradients are
# [B, Hkv, G, S, S_kv]. Both contractions are linalg.generics reading the operands in
# place (no transpose, no repeated kv heads); the softmax is reductions over S_kv.

from dataclasses import replace  # noqa: E402

from xdsl.dialects import arith, func  # noqa: E402
from xdsl.dialects import tensor as tensor_ops  # noqa: E402
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, i64  # noqa: E402
from xdsl.ir import SSAValue  # noqa: E402
from xdsl.ir.affine import AffineMap  # noqa: E402

from rlx_mlir.diagnostics import int_setting  # noqa: E402
from rlx_mlir.rules import LOWER  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.lowering.emitter import Emitter

_P, _R = "parallel", "reduction"
_SCORES_MAP = AffineMap.from_callable(lambda b, h, g, s, t: (b, h, g, s, t))
_ROW_MAP = AffineMap.from_callable(lambda b, h, g, s, t: (b, h, g, s))
_KEY_MASK_MAP = AffineMap.from_callable(lambda b, h, g, s, t: (b, t))
_QUERY_DIM, _KEY_DIM = 3, 4  # positions of s and t in the scores iteration space
GROUPED_HEADS = [[0], [1], [2, 3, 4]]  # [B, S, Hq*D] <-> [B, S, Hkv, G, D]
KV_HEADS = [[0], [1], [2, 3]]  # [B, S_kv, Hkv*D] <-> [B, S_kv, Hkv, D]
GROUPED_SCORES = [[0], [1, 2], [3], [4]]  # [B, Hq, S, S_kv] <-> [B, Hkv, G, S, S_kv]


@dataclass(frozen=True)
class Contraction:
    """A ``linalg.generic`` computing ``out += a * b`` (maps over one iteration space)."""

    a_map: AffineMap
    b_map: AffineMap
    out_map: AffineMap
    iterators: tuple[str, ...]

    def out_shape(self, a_shape: Sequence[int], b_shape: Sequence[int]) -> list[int]:
        """Loop sizes read off the operands (every map result is a plain dimension)."""
        sizes = {expr.position: size  # type: ignore[attr-defined]
                 for m, shape in ((self.a_map, a_shape), (self.b_map, b_shape))
                 for expr, size in zip(m.results, shape, strict=True)}
        return [sizes[expr.position] for expr in self.out_map.results]  # type: ignore[attr-defined]

    def emit(self, e: Emitter, a: SSAValue, b: SSAValue,
             init: SSAValue | None = None) -> SSAValue:
        """``init + a * b`` contracted (``init`` defaults to zeros)."""
        if init is None:
            out_shape = self.out_shape(shape_of(a.type), shape_of(b.type))
            init = e.fill(0.0, out_shape, a.type.element_type)  # type: ignore[attr-defined]
        return e.generic([a, b], [init], [self.a_map, self.b_map, self.out_map],
                         self.iterators, lambda s, x, y, acc: s.add(acc, s.mul(x, y)))


SCORES_CONTRACTION = Contraction(
    AffineMap.from_callable(lambda b, h, g, s, t, d: (b, s, h, g, d)),
    AffineMap.from_callable(lambda b, h, g, s, t, d: (b, t, h, d)),
    AffineMap.from_callable(lambda b, h, g, s, t, d: (b, h, g, s, t)),
    (_P,) * 5 + (_R,))
"""``[B, S, Hkv, G, D] x [B, S_kv, Hkv, D] -> [B, Hkv, G, S, S_kv]`` (Q K^T, dO V^T)."""

KEYS_CONTRACTION = Contraction(
    AffineMap.from_callable(lambda b, s, h, g, d, t: (b, h, g, s, t)),
    AffineMap.from_callable(lambda b, s, h, g, d, t: (b, t, h, d)),
    AffineMap.from_callable(lambda b, s, h, g, d, t: (b, s, h, g, d)),
    (_P,) * 5 + (_R,))
"""``[B, Hkv, G, S, S_kv] x [B, S_kv, Hkv, D] -> [B, S, Hkv, G, D]`` (P V, dS K)."""

QUERIES_CONTRACTION = Contraction(
    AffineMap.from_callable(lambda b, t, h, d, g, s: (b, h, g, s, t)),
    AffineMap.from_callable(lambda b, t, h, d, g, s: (b, s, h, g, d)),
    AffineMap.from_callable(lambda b, t, h, d, g, s: (b, t, h, d)),
    (_P,) * 4 + (_R,) * 2)
"""``[B, Hkv, G, S, S_kv] x [B, S, Hkv, G, D] -> [B, S_kv, Hkv, D]`` summed over the
group (P^T dO, dS^T Q)."""


def regroup(e: Emitter, x: SSAValue, shape: Sequence[int], groups: list[list[int]]) -> SSAValue:
    """``tensor.expand_shape`` (more dims) or ``collapse_shape`` (fewer) by ``groups``."""
    reassociation = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])
    result = TensorType(x.type.element_type, list(shape))  # type: ignore[attr-defined]
    if len(shape) > len(shape_of(x.type)):
        props = {"reassociation": reassociation,
                 "static_output_shape": DenseArrayBase.from_list(i64, list(shape))}
        return e.emit(tensor_ops.ExpandShapeOp.create(
            operands=[x], result_types=[result], properties=props))
    return e.emit(tensor_ops.CollapseShapeOp.create(
        operands=[x], result_types=[result], properties={"reassociation": reassociation}))


def merge_groups(e: Emitter, x: SSAValue, groups: list[list[int]]) -> SSAValue:
    """Collapse ``x`` by ``groups`` (row-major: a view, no copy)."""
    shape = shape_of(x.type)
    merged = [math.prod(shape[i] for i in g) for g in groups]
    return regroup(e, x, merged, groups)


@dataclass(frozen=True)
class GroupedOperands:
    """The operands of an attention op as head-grouped views (``expand_shape``)."""

    cfg: AttentionConfig
    q: SSAValue  # [B, S, Hkv, G, D]
    k: SSAValue  # [B, S_kv, Hkv, D]
    v: SSAValue  # [B, S_kv, Hkv, D]
    mask: SSAValue | None  # custom [B, S_kv]; bias [B, Hkv, G, S, S_kv]

    @classmethod
    def of(cls, e: Emitter, cfg: AttentionConfig, q: SSAValue, k: SSAValue, v: SSAValue,
           mask: SSAValue | None) -> GroupedOperands:
        return cls(cfg, cls.queries(e, cfg, q), cls.keys(e, cfg, k), cls.keys(e, cfg, v),
                   cls._mask(e, cfg, mask))

    @staticmethod
    def queries(e: Emitter, cfg: AttentionConfig, x: SSAValue) -> SSAValue:
        """``[B, S, Hq*D] -> [B, S, Hkv, G, D]`` (q, dy)."""
        b, s, _ = shape_of(x.type)
        shape = (b, s, cfg.num_kv_heads, cfg.group, cfg.head_dim)
        return regroup(e, x, shape, GROUPED_HEADS)

    @staticmethod
    def keys(e: Emitter, cfg: AttentionConfig, x: SSAValue) -> SSAValue:
        b, skv, _ = shape_of(x.type)
        return regroup(e, x, (b, skv, cfg.num_kv_heads, cfg.head_dim), KV_HEADS)

    @staticmethod
    def _mask(e: Emitter, cfg: AttentionConfig, mask: SSAValue | None) -> SSAValue | None:
        if cfg.mask_kind != "bias":
            return mask
        b, _, s, skv = shape_of(mask.type)  # type: ignore[union-attr]
        shape = (b, cfg.num_kv_heads, cfg.group, s, skv)
        return regroup(e, mask, shape, GROUPED_SCORES)  # type: ignore[arg-type]


def _position(s: Emitter, dim: int) -> SSAValue:
    """``linalg.index dim`` as i64."""
    return s.index(dim)


def _causal_bounds(s: Emitter, lengths: tuple[int, int]) -> tuple[SSAValue, SSAValue]:
    """(key position, absolute query position ``S_kv - S + qi``)."""
    q_len, kv_len = lengths
    return _position(s, _KEY_DIM), s.add(_position(s, _QUERY_DIM), kv_len - q_len)


def _keep_causal_lowered(s: Emitter, cfg: AttentionConfig, lengths: tuple[int, int],
                         mask: SSAValue | None) -> SSAValue:
    key, abs_q = _causal_bounds(s, lengths)
    return s.cmp("le", key, abs_q)


def _keep_window_lowered(s: Emitter, cfg: AttentionConfig, lengths: tuple[int, int],
                         mask: SSAValue | None) -> SSAValue:
    key, abs_q = _causal_bounds(s, lengths)
    lower = s.cmp("ge", key, s.sub(abs_q, cfg.window))
    return s.emit(arith.AndIOp(s.cmp("le", key, abs_q), lower))


def _keep_custom_lowered(s: Emitter, cfg: AttentionConfig, lengths: tuple[int, int],
                         mask: SSAValue | None) -> SSAValue:
    if s.is_float(mask):  # type: ignore[arg-type]
        return s.cmp("ge", mask, CUSTOM_KEEP_THRESHOLD)  # type: ignore[arg-type]
    return mask  # type: ignore[return-value]


def _keep_causal_padding_lowered(s: Emitter, cfg: AttentionConfig, lengths: tuple[int, int],
                                 mask: SSAValue | None) -> SSAValue:
    return s.emit(arith.AndIOp(_keep_causal_lowered(s, cfg, lengths, mask),
                               _keep_custom_lowered(s, cfg, lengths, mask)))


KeepBody = Callable[["Emitter", AttentionConfig, tuple[int, int], SSAValue | None], SSAValue]
KEEP_BODIES: dict[str, KeepBody | None] = {
    "none": None,
    "causal": _keep_causal_lowered,
    "sliding_window": _keep_window_lowered,
    "custom": _keep_custom_lowered,
    "causal_padding": _keep_causal_padding_lowered,
    "bias": None,
}
"""mask_kind -> the i1 keep predicate in a scores body (None: every key is kept)."""


def scaled_scores(s: Emitter, cfg: AttentionConfig, qk: SSAValue) -> SSAValue:
    """``score_scale * (Q K^T)`` for one element (the interpreter's order)."""
    return s.mul(qk, cfg.scale)


def masked_logits(e: Emitter, ops: GroupedOperands, qk: SSAValue,
                  lengths: tuple[int, int]) -> SSAValue:
    """Logits (scale, softcap, + bias) with every dropped key set to ``-inf``."""
    cfg, keep_body = ops.cfg, KEEP_BODIES[ops.cfg.mask_kind]
    inputs, maps = [qk], [_SCORES_MAP]
    if ops.mask is not None:
        inputs.append(ops.mask)
        maps.append(_KEY_MASK_MAP if cfg.mask_kind in KEY_PADDING_KINDS else _SCORES_MAP)
    init = e.empty(shape_of(qk.type), qk.type.element_type)  # type: ignore[attr-defined]

    def body(s: Emitter, x: SSAValue, *rest: SSAValue) -> SSAValue:
        mask = rest[0] if ops.mask is not None else None
        logit = scaled_scores(s, cfg, x)
        if cfg.softcap is not None:
            logit = s.mul(s.tanh(s.div(logit, cfg.softcap)), cfg.softcap)
        if cfg.mask_kind == "bias":
            logit = s.add(logit, mask)  # type: ignore[arg-type]
        keep = s.cmp("ne", logit, -math.inf)
        if keep_body is not None:
            keep = s.emit(arith.AndIOp(keep_body(s, cfg, lengths, mask), keep))
        return s.select(keep, logit, -math.inf)

    return e.generic(inputs, [init], [*maps, _SCORES_MAP], (_P,) * 5, body)


def row_reduce(e: Emitter, inputs: Sequence[SSAValue], init: float,
                body: Callable[..., SSAValue]) -> SSAValue:
    """Reduce [B, Hkv, G, S, S_kv] operands over S_kv into [B, Hkv, G, S]."""
    first = inputs[0]
    acc = e.fill(init, shape_of(first.type)[:4], first.type.element_type)  # type: ignore[attr-defined]
    maps = [_SCORES_MAP] * len(inputs) + [_ROW_MAP]
    return e.generic(inputs, [acc], maps, (_P,) * 4 + (_R,), body)


def with_rows(e: Emitter, full: Sequence[SSAValue], rows: Sequence[SSAValue],
               body: Callable[..., SSAValue]) -> SSAValue:
    """Parallel generic over [B, Hkv, G, S, S_kv]; ``rows`` ([B, Hkv, G, S]) broadcast."""
    init = e.empty(shape_of(full[0].type), full[0].type.element_type)  # type: ignore[attr-defined]
    maps = [_SCORES_MAP] * len(full) + [_ROW_MAP] * len(rows) + [_SCORES_MAP]
    return e.generic([*full, *rows], [init], maps, (_P,) * 5,
                     lambda s, *args: body(s, *args[: len(full) + len(rows)]))


def masked_softmax_lowered(e: Emitter, logits: SSAValue) -> SSAValue:
    """Softmax over S_kv of logits where dropped keys are ``-inf``: they get exactly 0,
    and a row with no kept key (or a non-finite max) is handled as the interpreter does."""
    peak = row_reduce(e, [logits], -math.inf, lambda s, x, acc: s.max(x, acc))

    def weight(s: Emitter, x: SSAValue, m: SSAValue) -> SSAValue:
        finite_max = s.select(s.cmp("lt", s.abs(m), math.inf), m, 0.0)
        return s.select(s.cmp("ne", x, -math.inf), s.exp(s.sub(x, finite_max)), 0.0)

    weights = with_rows(e, [logits], [peak], weight)
    total = row_reduce(e, [weights], 0.0, lambda s, w, acc: s.add(w, acc))
    return with_rows(e, [weights], [total],
                      lambda s, w, t: s.select(s.cmp("gt", t, 0.0), s.div(w, t), 0.0))


def lowered_probs(e: Emitter, ops: GroupedOperands, qk: SSAValue,
                  lengths: tuple[int, int] | None = None) -> SSAValue:
    """``P`` [B, Hkv, G, S, S_kv] from ``qk`` = the unscaled ``Q K^T`` contraction.
    ``lengths`` = (S, S_kv) of the whole attention when ``ops`` holds a block of its rows
    (the causal offset of row i is then ``S_kv - S``; see :class:`RowBlock`)."""
    if lengths is None:
        lengths = (shape_of(ops.q.type)[1], shape_of(ops.k.type)[1])
    return masked_softmax_lowered(e, masked_logits(e, ops, qk, lengths))


def shared_probs(e: Emitter, cfg: AttentionConfig, q: SSAValue, k: SSAValue, v: SSAValue,
                 mask: SSAValue | None) -> tuple[GroupedOperands, SSAValue, SSAValue]:
    """(grouped operands, unscaled ``Q K^T``, ``P``), emitted once per block for these
    operands: the forward op and its gradient ops share them (no recomputation)."""

    def build() -> tuple[GroupedOperands, SSAValue, SSAValue]:
        ops = GroupedOperands.of(e, cfg, q, k, v, mask)
        qk = SCORES_CONTRACTION.emit(e, ops.q, ops.k)
        return ops, qk, lowered_probs(e, ops, qk)

    return e.once(("attention-probs", cfg, q, k, v, mask), build)


# ---------------------------------------------------------------- per-head lowering
# At the top level of a function, attention is one ``scf.forall`` over (batch, kv head):
# each iteration computes its head group's scores, softmax and output on tiles that stay
# in cache ([G, S, S_kv] per head group instead of [B, Hkv, G, S, S_kv] per pass), and the
# iterations run on the async runtime's threads. The forward also writes ``P`` when
# gradient ops of the same attention are in the block; their own forall reads it.


def forall_builders():
    """``rlx_mlir.lowering.forall``, imported on first use (the lowering imports the dialects)."""
    from rlx_mlir.lowering import forall as module

    return module


def head_chunks() -> int:
    """Parallel tasks of a per-head loop: one per thread (``RLX_NUM_THREADS``)."""
    from rlx_mlir.lowering.schedules import num_threads

    return num_threads()


def lowers_per_head(op: RlxOp) -> bool:
    """True when ``op`` sits directly in a function body (not a scan or control region:
    those keep the whole-tensor lowering, one thread split per iteration being too fine)."""
    return isinstance(op.parent_op(), func.FuncOp)


def head_config(cfg: AttentionConfig) -> AttentionConfig:
    """The configuration of one kv head's group: ``G`` query heads over one kv head."""
    return replace(cfg, num_heads=cfg.group, num_kv_heads=1)


@dataclass(frozen=True)
class HeadTile:
    """Where one (batch, kv head) iteration's tiles sit in the full tensors."""

    cfg: AttentionConfig
    batch: SSAValue
    head: SSAValue
    query_col: SSAValue | int  # first column of the head group in [B, S, Hq*D]
    kv_col: SSAValue | int  # first column of the kv head in [B, S_kv, Hkv*D]

    @classmethod
    def at(cls, e: Emitter, cfg: AttentionConfig, ivs: Sequence[SSAValue]) -> HeadTile:
        b, h = ivs
        width = cfg.head_dim
        index_mul = forall_builders().index_mul
        return cls(cfg, b, h, index_mul(e, h, cfg.group * width), index_mul(e, h, width))

    def queries(self, e: Emitter, x: SSAValue) -> SSAValue:
        """``x[b, :, group columns]`` of a [B, S, Hq*D] tensor (q, dy, dq)."""
        _, s, _ = shape_of(x.type)
        return forall_builders().slice_of(e, x, self.query_offsets(), [1, s, self.cfg.group * self.cfg.head_dim])

    def keys(self, e: Emitter, x: SSAValue) -> SSAValue:
        _, skv, _ = shape_of(x.type)
        return forall_builders().slice_of(e, x, self.kv_offsets(), [1, skv, self.cfg.head_dim])

    def mask(self, e: Emitter, mask: SSAValue | None) -> SSAValue | None:
        """Custom masks [B, S_kv] by batch row; bias [B, Hq, S, S_kv] by head group."""
        if mask is None or self.cfg.mask_kind != "bias":
            return None if mask is None else forall_builders().slice_of(
                e, mask, [self.batch, 0], [1, shape_of(mask.type)[1]])
        _, _, s, skv = shape_of(mask.type)
        return forall_builders().slice_of(e, mask, self.bias_offsets(e), [1, self.cfg.group, s, skv])

    def query_offsets(self) -> list[SSAValue | int]:
        return [self.batch, 0, self.query_col]

    def kv_offsets(self) -> list[SSAValue | int]:
        return [self.batch, 0, self.kv_col]

    def bias_offsets(self, e: Emitter) -> list[SSAValue | int]:
        return [self.batch, forall_builders().index_mul(e, self.head, self.cfg.group), 0, 0]

    def probs_offsets(self) -> list[SSAValue | int]:
        return [self.batch, self.head, 0, 0, 0]

    def operands(self, e: Emitter, q: SSAValue, k: SSAValue, v: SSAValue,
                 mask: SSAValue | None) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue | None]:
        return self.queries(e, q), self.keys(e, k), self.keys(e, v), self.mask(e, mask)


CAUSAL_BLOCK_MIN = 128  # rows per block at least (fewer blocks for short sequences)


def causal_blocks() -> int:
    """Row blocks of a causal head (``RLX_CAUSAL_BLOCKS``, default 1, at most 8).

    Each block is its own code. On the benchmark transformer's gradient (S = 256), 2 blocks
    skip a quarter of the score square and ran the step 4% faster than 1, but added 0.13 s
    to its cold compile (the attention kernels were half of the LLVM input); 4 blocks were
    31% faster than 1 on an older pipeline and cost 3 s more LLVM time.

    >>> causal_blocks()   # doctest: +SKIP
    1
    """
    return int_setting("RLX_CAUSAL_BLOCKS", 1, minimum=1, maximum=8)


@dataclass(frozen=True)
class RowBlock:
    """Query rows ``[start, stop)`` of one head, which see keys ``[0, keys)`` at most.

    A causal head is cut into up to :func:`causal_blocks` row blocks and each block's
    scores, softmax and products only span the keys its last row can see: with 2 blocks
    of a square causal head, 3/4 of the full square (the rest of ``P`` is exactly 0).
    Other mask kinds are one block over every key."""

    start: int
    stop: int
    keys: int

    @property
    def rows(self) -> int:
        return self.stop - self.start


def row_blocks(cfg: AttentionConfig, s: int, skv: int) -> list[RowBlock]:
    """The row blocks of an ``S x S_kv`` head (each static, so each tile is too)."""
    count = min(causal_blocks(), s // CAUSAL_BLOCK_MIN) if cfg.mask_kind in CAUSAL_KINDS else 1
    if count <= 1:
        return [RowBlock(0, s, skv)]
    bounds = sorted({min(s, round(i * s / count / 8) * 8) for i in range(count + 1)} | {0, s})
    return [RowBlock(a, b, min(skv, max(0, b + skv - s))) for a, b in zip(bounds, bounds[1:], strict=False)]


def block_operands(e: Emitter, ops: GroupedOperands, block: RowBlock) -> GroupedOperands:
    """``ops`` cut to one row block: its query rows, the keys it sees, its mask part."""
    slice_of = forall_builders().slice_of
    b, s, hkv, g, d = shape_of(ops.q.type)
    if block.rows == s and block.keys == shape_of(ops.k.type)[1]:
        return ops
    q = slice_of(e, ops.q, [0, block.start, 0, 0, 0], [b, block.rows, hkv, g, d])
    k = slice_of(e, ops.k, [0, 0, 0, 0], [b, block.keys, hkv, d])
    v = slice_of(e, ops.v, [0, 0, 0, 0], [b, block.keys, hkv, d])
    mask = ops.mask
    if mask is not None and ops.cfg.mask_kind == "bias":
        mask = slice_of(e, mask, [0, 0, 0, block.start, 0], [b, hkv, g, block.rows, block.keys])
    elif mask is not None:
        mask = slice_of(e, mask, [0, 0], [b, block.keys])
    return GroupedOperands(ops.cfg, q, k, v, mask)


def head_forward(e: Emitter, ops: GroupedOperands,
                 with_probs: bool) -> tuple[SSAValue, SSAValue | None]:
    """(output [1, S, G*D], ``P`` [1, 1, G, S, S_kv] or None) of one kv head's group,
    row block by row block."""
    insert = forall_builders().insert_at_unless_whole
    b, s, hkv, g, d = shape_of(ops.q.type)
    skv = shape_of(ops.k.type)[1]
    dtype = ops.q.type.element_type  # type: ignore[attr-defined]
    out = e.empty([b, s, hkv * g * d], dtype)
    probs = e.empty([b, hkv, g, s, skv], dtype) if with_probs else None
    for block in row_blocks(ops.cfg, s, skv):
        if probs is not None and block.keys < skv:  # keys past the block's: P = 0
            unseen = e.fill(0.0, [b, hkv, g, block.rows, skv - block.keys], dtype)
            probs = insert(e, unseen, probs, [0, 0, 0, block.start, block.keys])
        if block.keys == 0:  # rows that see no key output 0
            out = insert(e, e.fill(0.0, [b, block.rows, hkv * g * d], dtype), out,
                         [0, block.start, 0])
            continue
        part = block_operands(e, ops, block)
        p = lowered_probs(e, part, SCORES_CONTRACTION.emit(e, part.q, part.k), (s - block.start, skv))
        o = merge_groups(e, KEYS_CONTRACTION.emit(e, p, part.v), GROUPED_HEADS)
        out = insert(e, o, out, [0, block.start, 0])
        if probs is not None:
            probs = insert(e, p, probs, [0, 0, 0, block.start, 0])
    return out, probs


def probs_shape(cfg: AttentionConfig, q: SSAValue, k: SSAValue) -> list[int]:
    """``[B, Hkv, G, S, S_kv]``."""
    (b, s, _), (_, skv, _) = shape_of(q.type), shape_of(k.type)
    return [b, cfg.num_kv_heads, cfg.group, s, skv]


def per_head_forward(e: Emitter, cfg: AttentionConfig, q: SSAValue, k: SSAValue,
                     v: SSAValue, mask: SSAValue | None,
                     with_probs: bool) -> tuple[SSAValue, SSAValue | None]:
    """(output [B, S, Hq*D], ``P`` [B, Hkv, G, S, S_kv] if ``with_probs``) by one forall."""
    dtype = q.type.element_type  # type: ignore[attr-defined]
    inits = [e.empty(shape_of(q.type), dtype)]
    if with_probs:
        inits.append(e.empty(probs_shape(cfg, q, k), dtype))

    def body(t: Emitter, ivs: Sequence[SSAValue]) -> list[tuple[SSAValue, list]]:
        tile = HeadTile.at(t, cfg, ivs)
        ops = GroupedOperands.of(t, head_config(cfg), *tile.operands(t, q, k, v, mask))
        out, probs = head_forward(t, ops, with_probs)
        tiles = [(out, tile.query_offsets())]
        return tiles + [(probs, tile.probs_offsets())] if with_probs else tiles

    results = forall_builders().chunked_forall(
        e, head_chunks(), [shape_of(q.type)[0], cfg.num_kv_heads], inits, body)
    return results[0], (results[1] if with_probs else None)


def shared_per_head_forward(e: Emitter, cfg: AttentionConfig, q: SSAValue, k: SSAValue,
                            v: SSAValue, mask: SSAValue | None,
                            with_probs: bool = True) -> tuple[SSAValue, SSAValue | None]:
    """:func:`per_head_forward` emitted once per block for these operands (the forward op
    asks first, with ``P`` only if gradient ops will read it)."""
    return e.once(("attention-per-head", cfg, q, k, v, mask),
                  lambda: per_head_forward(e, cfg, q, k, v, mask, with_probs))


def same_attention(a: RlxOp, b: RlxOp) -> bool:
    """Same q, k, v (and mask) operands and the same forward attributes."""
    def key(op: RlxOp) -> tuple:
        operands = list(op.operands)
        mask = operands[4:5] if op.name == "rlx.attention_backward" else operands[3:4]
        return (*operands[:3], *mask, AttentionConfig.from_attrs(op.py_attrs()))

    return key(a) == key(b)


def _has_gradient_ops(op: AttentionOp) -> bool:
    block = op.parent_block()
    return block is not None and any(
        other.name == "rlx.attention_backward" and same_attention(op, other)
        for other in block.ops)


@LOWER.register(AttentionOp)
def _lower_attention(op: AttentionOp, e: Emitter, q: SSAValue, k: SSAValue, v: SSAValue,
                     mask: SSAValue | None = None) -> SSAValue:
    cfg = AttentionConfig.from_attrs(op.py_attrs())
    if lowers_per_head(op):
        return shared_per_head_forward(e, cfg, q, k, v, mask, _has_gradient_ops(op))[0]
    ops, _, probs = shared_probs(e, cfg, q, k, v, mask)
    return merge_groups(e, KEYS_CONTRACTION.emit(e, probs, ops.v), GROUPED_HEADS)
