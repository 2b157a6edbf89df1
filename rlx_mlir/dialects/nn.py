"""Neural-network family: softmax, log_softmax, the normalisations, softmax
cross-entropy and rotary position embedding (SPEC 2.1.9-2.1.13, 2.1.20, 2.2.4).

Every op but cross-entropy keeps the shape and dtype of ``x`` (f32 or f64)::

    %y = rlx.layer_norm %x, %g, %b {eps = 1.0e-05 : f32}
           : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %l = rlx.softmax_cross_entropy %z, %t : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    define_op,
    dtype_of,
    expect_float,
    expect_index,
    expect_rank,
    norm_axis,
    optional,
    require,
    shape_of,
    tensor,
)
from rlx_mlir.rules import INTERPRET

AXIS_DOC = "i64, default -1 (negative counts from the end)"
LAST_AXIS_DOC = "i64, default -1; must name the last axis"


def eps_doc(default: float) -> str:
    return f"f32, default {default:g}; added to the variance (>= 0)"


# ---------------------------------------------------------------- shared checks


def check_eps(attrs: dict[str, Any], default: float) -> float:
    """The ``eps`` attribute (an f32 float >= 0), or ``default``."""
    eps = optional(attrs, "eps", float, default)
    if not eps >= 0:
        raise ShapeError(f"attribute 'eps' must be >= 0, got {eps}")
    return eps


def check_last_axis(op_name: str, attrs: dict[str, Any], rank: int) -> int:
    """``axis`` (default -1) normalised; ShapeError unless it is the last axis.

    ``check_last_axis("rlx.layer_norm", {"axis": -1}, 2) == 1``
    """
    raw = optional(attrs, "axis", int, -1)
    axis = norm_axis(raw, rank)
    if axis != rank - 1:
        raise ShapeError(
            f"'{op_name}' normalises the last axis only: axis {raw} is axis {axis} "
            f"of a rank-{rank} operand (transpose first)"
        )
    return axis


def check_vectors(op_name: str, dtype: str, size: int, reason: str,
                  named: Sequence[tuple[str, TensorType]]) -> None:
    """Each ``(name, type)`` must be ``tensor<size x dtype>``.

    ``reason`` says where ``size`` comes from ("the last dim of x", ...).
    """
    want = tensor((size,), dtype)
    for name, t in named:
        if shape_of(t) != (size,) or dtype_of(t) != dtype:
            raise ShapeError(f"'{op_name}' {name} must be {want} ({reason}), got {t}")


def check_rows(op_name: str, x: TensorType, attrs: dict[str, Any],
               eps: float) -> tuple[str, tuple[int, ...]]:
    """``(dtype, shape)`` of a last-axis norm's float ``x``; checks ``axis`` and ``eps``."""
    dtype = expect_float(x, f"'{op_name}' operand x")
    shape = shape_of(x)
    check_last_axis(op_name, attrs, len(shape))
    check_eps(attrs, eps)
    return dtype, shape


def check_groups(op_name: str, x: TensorType, attrs: dict[str, Any]) -> tuple[str, int]:
    """``(dtype, C)`` of a group norm's float ``x [N, C, ...]``; checks ``num_groups``
    (positive, divides C) and ``eps``."""
    dtype = expect_float(x, f"'{op_name}' operand x")
    channels = expect_rank(x, (3, 4), f"'{op_name}' operand x ([N, C, L] or [N, C, H, W])")[1]
    groups = require(attrs, "num_groups", int)
    if groups <= 0 or channels % groups:
        raise ShapeError(
            f"'{op_name}' num_groups = {groups} must be positive and divide C = {channels}"
        )
    check_eps(attrs, 1e-5)
    return dtype, channels


def check_rope(op_name: str, x: TensorType, cos: TensorType, sin: TensorType,
               attrs: dict[str, Any], x_name: str = "x") -> TensorType:
    """The checks of ``rlx.rope`` (layout, head_dim, n_rot, tables); returns ``x``."""
    dtype = expect_float(x, f"'{op_name}' operand {x_name}")
    shape = expect_rank(x, (2, 3), f"'{op_name}' operand {x_name} ([S, hidden] or [B, S, hidden])")
    head_dim = require(attrs, "head_dim", int)
    if head_dim <= 0 or head_dim % 2 or shape[-1] % head_dim:
        raise ShapeError(f"'{op_name}' head_dim = {head_dim} must be positive, even and "
                         f"divide the hidden size {shape[-1]}")
    n_rot = optional(attrs, "n_rot", int, head_dim)
    if not 0 < n_rot <= head_dim or n_rot % 2:
        raise ShapeError(f"'{op_name}' n_rot = {n_rot} must be positive, even and "
                         f"<= head_dim = {head_dim}")
    want = tensor((shape[-2], head_dim // 2), dtype)
    for table_name, table in (("cos", cos), ("sin", sin)):
        if table != want:
            raise ShapeError(f"'{op_name}' {table_name} table must be {want} "
                             f"([S, head_dim/2]), got {table}")
    return x


# ---------------------------------------------------------------- shared reference math


def row_moments(x: np.ndarray, centered: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(xc, mean(xc^2))`` over the last axis, keep-dims.

    ``xc`` is ``x - mean(x)`` when ``centered`` (layer/group norm), else ``x`` (RMS norm).
    """
    xc = x - x.mean(axis=-1, keepdims=True) if centered else x
    return xc, (xc * xc).mean(axis=-1, keepdims=True)


def standardize_rows(x: np.ndarray, eps: float, centered: bool) -> np.ndarray:
    """``xc / sqrt(mean(xc^2) + eps)`` over the last axis (see :func:`row_moments`)."""
    xc, square_mean = row_moments(x, centered)
    return xc / np.sqrt(square_mean + eps)


def channel_broadcast(v: np.ndarray, ndim: int) -> np.ndarray:
    """A ``[C]`` vector as ``[1, C, 1, ...]``, against a rank-``ndim`` ``[N, C, ...]``."""
    return v.reshape((1, -1) + (1,) * (ndim - 2))


def rotate_half(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, head_dim: int,
                n_rot: int) -> np.ndarray:
    """Rotate-half rope of ``x [..., S, H*head_dim]`` by tables ``[S, head_dim/2]``."""
    half = n_rot // 2
    heads = x.reshape(*x.shape[:-1], -1, head_dim)  # [..., S, H, head_dim]
    c, s = cos[:, None, :half], sin[:, None, :half]  # [S, 1, half]
    first, second = heads[..., :half], heads[..., half:2 * half]
    y = heads.copy()
    y[..., :half] = first * c - second * s
    y[..., half:2 * half] = second * c + first * s
    return y.reshape(x.shape)


# ---------------------------------------------------------------- softmax / log_softmax


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


class SoftmaxLikeOp(RlxOp):
    """A normalisation of exponentials along ``axis`` (any axis; same shape and dtype)."""

    x = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"axis": AXIS_DOC}
    NUMPY_FN: ClassVar[Callable[[np.ndarray, int], np.ndarray]]

    @classmethod
    def infer(cls, types, attrs, out):
        expect_float(types[0], f"'{cls.name}' operand")
        norm_axis(optional(attrs, "axis", int, -1), len(shape_of(types[0])))
        return [types[0]]


SoftmaxOp = define_op(
    "SoftmaxOp", SoftmaxLikeOp, "rlx.softmax",
    """Softmax ``exp(x - max) / sum(exp(x - max))`` along ``axis`` (stable).

    Example::

        %y = rlx.softmax %x {axis = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    """,
    NUMPY_FN=staticmethod(_softmax),
)
LogSoftmaxOp = define_op(
    "LogSoftmaxOp", SoftmaxLikeOp, "rlx.log_softmax",
    """Log-softmax ``x - max - log(sum(exp(x - max)))`` along ``axis`` (stable).

    Example::

        %y = rlx.log_softmax %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    """,
    NUMPY_FN=staticmethod(_log_softmax),
)


@INTERPRET.register(SoftmaxOp, LogSoftmaxOp)
def _interpret_softmax_like(op: SoftmaxLikeOp, x: np.ndarray) -> np.ndarray:
    axis = norm_axis(op.attr("axis", -1), x.ndim)
    with np.errstate(all="ignore"):
        return type(op).NUMPY_FN(x, axis)


# ---------------------------------------------------------------- layer_norm / rms_norm


@irdl_op_definition
class LayerNormOp(RlxOp):
    """Layer norm over the last axis: ``(x - mean) / sqrt(var + eps) * gamma + beta``.

    The variance is biased (divides by D). gamma and beta are ``[D]``, D the last dim.

    Example::

        %y = rlx.layer_norm %x, %g, %b {eps = 1.0e-05 : f32}
               : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    """

    name = "rlx.layer_norm"
    x = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"axis": LAST_AXIS_DOC, "eps": eps_doc(1e-5)}

    @classmethod
    def infer(cls, types, attrs, out):
        x, gamma, beta = types
        dtype, shape = check_rows(cls.name, x, attrs, 1e-5)
        check_vectors(cls.name, dtype, shape[-1], "the last dim of x",
                      [("gamma", gamma), ("beta", beta)])
        return [x]


@INTERPRET.register(LayerNormOp)
def _interpret_layer_norm(op: LayerNormOp, x: np.ndarray, gamma: np.ndarray,
                          beta: np.ndarray) -> np.ndarray:
    return standardize_rows(x, op.attr("eps", 1e-5), centered=True) * gamma + beta


@irdl_op_definition
class RmsNormOp(RlxOp):
    """RMS norm over the last axis: ``x * rsqrt(mean(x^2) + eps) * gamma (+ beta)``.

    ``beta`` is optional (DESIGN's contract is ``x, gamma``; SPEC's reference adds a
    beta, zeros in Llama-style graphs).

    Example::

        %y = rlx.rms_norm %x, %g {eps = 1.0e-06 : f32}
               : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    """

    name = "rlx.rms_norm"
    x = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = opt_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"axis": LAST_AXIS_DOC, "eps": eps_doc(1e-6)}

    @classmethod
    def infer(cls, types, attrs, out):
        x, *params = types
        dtype, shape = check_rows(cls.name, x, attrs, 1e-6)
        check_vectors(cls.name, dtype, shape[-1], "the last dim of x",
                      list(zip(("gamma", "beta"), params, strict=False)))
        return [x]


@INTERPRET.register(RmsNormOp)
def _interpret_rms_norm(op: RmsNormOp, x: np.ndarray, gamma: np.ndarray,
                        beta: np.ndarray | None = None) -> np.ndarray:
    y = standardize_rows(x, op.attr("eps", 1e-6), centered=False) * gamma
    return y if beta is None else y + beta


# ---------------------------------------------------------------- group_norm / batch_norm


@irdl_op_definition
class GroupNormOp(RlxOp):
    """Group norm of ``x [N, C, H, W]`` or ``[N, C, L]``; gamma, beta are ``[C]``.

    Each sample's ``num_groups`` groups of ``C / num_groups`` consecutive channels are
    normalised over all their elements (biased variance), then scaled per channel.

    Example::

        %y = rlx.group_norm %x, %g, %b {num_groups = 2 : i64}
               : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3xf32>
    """

    name = "rlx.group_norm"
    x = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "num_groups": "i64, required; positive and divides C",
        "eps": eps_doc(1e-5),
    }

    @classmethod
    def infer(cls, types, attrs, out):
        x, gamma, beta = types
        dtype, channels = check_groups(cls.name, x, attrs)
        check_vectors(cls.name, dtype, channels, "one per channel, dim 1 of x",
                      [("gamma", gamma), ("beta", beta)])
        return [x]


@INTERPRET.register(GroupNormOp)
def _interpret_group_norm(op: GroupNormOp, x: np.ndarray, gamma: np.ndarray,
                          beta: np.ndarray) -> np.ndarray:
    grouped = x.reshape(x.shape[0], op.attr("num_groups"), -1)
    normed = standardize_rows(grouped, op.attr("eps", 1e-5), centered=True).reshape(x.shape)
    return normed * channel_broadcast(gamma, x.ndim) + channel_broadcast(beta, x.ndim)


@irdl_op_definition
class BatchNormInferenceOp(RlxOp):
    """Batch norm with frozen statistics; the channel axis is the LAST axis of x.

    ``y = (x - mean[c]) / sqrt(var[c] + eps) * gamma[c] + beta[c]``; the four
    vectors are ``[C]``.

    Example::

        %y = rlx.batch_norm_inference %x, %g, %b, %m, %v {eps = 1.0e-05 : f32}
               : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
                  tensor<3xf32>) -> tensor<2x5x3xf32>
    """

    name = "rlx.batch_norm_inference"
    x = operand_def(TensorType)
    gamma = operand_def(TensorType)
    beta = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"eps": eps_doc(1e-5)}

    @classmethod
    def infer(cls, types, attrs, out):
        x, *stats = types
        dtype = expect_float(x, f"'{cls.name}' operand x")
        shape = shape_of(x)
        if not shape:
            raise ShapeError(f"'{cls.name}' operand x needs a channel (last) axis, got {x}")
        check_eps(attrs, 1e-5)
        check_vectors(cls.name, dtype, shape[-1], "one per channel, the last dim of x",
                      list(zip(("gamma", "beta", "mean", "var"), stats, strict=True)))
        return [x]


@INTERPRET.register(BatchNormInferenceOp)
def _interpret_batch_norm(op: BatchNormInferenceOp, x: np.ndarray, gamma: np.ndarray,
                          beta: np.ndarray, mean: np.ndarray, var: np.ndarray) -> np.ndarray:
    return (x - mean) / np.sqrt(var + op.attr("eps", 1e-5)) * gamma + beta


# ---------------------------------------------------------------- softmax_cross_entropy


@irdl_op_definition
class SoftmaxCrossEntropyOp(RlxOp):
    """Per-row loss ``logsumexp(z_n) - z_n[label_n]`` of logits ``[N, C]``; result ``[N]``.

    Labels are ``[N]`` i32, i64 or f32-encoded integers (f32 labels truncate toward
    zero). No reduction, ignore_index or smoothing. A label outside ``[0, C)``
    (negative, too large, NaN) has an all-zero one-hot row, so its loss is
    ``logsumexp(z_n)`` (and its logits' gradient is ``softmax(z_n)``).

    Example::

        %l = rlx.softmax_cross_entropy %z, %t
               : (tensor<4x10xf32>, tensor<4xi64>) -> tensor<4xf32>
    """

    name = "rlx.softmax_cross_entropy"
    logits = operand_def(TensorType)
    labels = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {}

    @classmethod
    def infer(cls, types, attrs, out):
        logits, labels = types
        dtype = expect_float(logits, f"'{cls.name}' logits")
        rows = expect_rank(logits, (2,), f"'{cls.name}' logits ([N, C])")[0]
        expect_index(labels, f"'{cls.name}' labels")
        if shape_of(labels) != (rows,):
            raise ShapeError(
                f"'{cls.name}' labels must be [N] = [{rows}] (one class per row), got {labels}"
            )
        return [tensor((rows,), dtype)]


def label_indices(labels: np.ndarray, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(class index, in-range mask) of integer or f32-encoded labels.

    ``label_indices(np.array([1.7, -1, 9]), 3)`` is ``([1, 0, 0], [True, False, False])``.
    """
    values = np.trunc(labels.astype(np.float64)) if labels.dtype.kind == "f" else labels
    valid = (values >= 0) & (values < classes)
    return np.where(valid, values, 0).astype(np.int64), valid


@INTERPRET.register(SoftmaxCrossEntropyOp)
def _interpret_softmax_cross_entropy(op: SoftmaxCrossEntropyOp, logits: np.ndarray,
                                     labels: np.ndarray) -> np.ndarray:
    index, valid = label_indices(labels, logits.shape[1])
    top = logits.max(axis=1, keepdims=True)
    shifted = logits - top  # loss = log(sum(exp(shifted))) - shifted[label], no cancellation
    with np.errstate(all="ignore"):
        log_sum = np.log(np.exp(shifted).sum(axis=1))
    picked = np.take_along_axis(shifted, index[:, None], axis=1)[:, 0]
    return log_sum - np.where(valid, picked, -top[:, 0])


# ---------------------------------------------------------------- rope


@irdl_op_definition
class RopeOp(RlxOp):
    """Rotary position embedding, rotate-half form, on ``x [B, S, H*head_dim]`` or
    ``[S, H*head_dim]`` with tables ``cos``, ``sin`` of shape ``[S, head_dim/2]``.

    Per position s and head, with ``half = n_rot/2`` and ``c_i = cos[s, i]``, for
    ``i < half``: ``y[i] = x[i] c_i - x[half+i] s_i``, ``y[half+i] = x[half+i] c_i +
    x[i] s_i``; dims ``n_rot .. head_dim-1`` pass through.

    Example::

        %y = rlx.rope %x, %c, %s {head_dim = 4 : i64}
               : (tensor<1x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x3x8xf32>
    """

    name = "rlx.rope"
    x = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "head_dim": "i64, required; positive, even, divides the last dim of x",
        "n_rot": "i64, default head_dim; positive, even, <= head_dim (rotated dims per head)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        return [check_rope(cls.name, *types, attrs)]


@INTERPRET.register(RopeOp)
def _interpret_rope(op: RopeOp, x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    head_dim = op.attr("head_dim")
    return rotate_half(x, cos, sin, head_dim, op.attr("n_rot", head_dim))


OPS = [
    SoftmaxOp, LogSoftmaxOp, LayerNormOp, RmsNormOp, GroupNormOp, BatchNormInferenceOp,
    SoftmaxCrossEntropyOp, RopeOp,
]


# ---------------------------------------------------------------- VJP rules (SPEC 5.4, 5.6, 5.8)
# The norms use the closed-form ``rlx.*_backward`` ops of rlx_mlir/dialects/backward/norms.py;
# statistics (batch norm's mean, var), labels and rope tables get no gradient.

from typing import TYPE_CHECKING  # noqa: E402

from rlx_mlir.rules import VJP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext


def _softmax_axis(op: SoftmaxLikeOp) -> list[int]:
    return [norm_axis(op.attr("axis", -1), len(shape_of(op.x.type)))]


@VJP.register(SoftmaxOp)
def _vjp_softmax(ctx: VjpContext, op: SoftmaxLikeOp, g: Tensor) -> list[Tensor | None]:
    """``y * (g - sum_axis(y * g))``, composed from primitives."""
    (y,) = ctx.outputs(op)
    dot = ctx.b.reduce_sum(y * g, axes=_softmax_axis(op), keep_dims=True)
    return [y * (g - dot)]


@VJP.register(LogSoftmaxOp)
def _vjp_log_softmax(ctx: VjpContext, op: SoftmaxLikeOp, g: Tensor) -> list[Tensor | None]:
    """``g - exp(y) * sum_axis(g)`` (``exp(y)`` is the softmax)."""
    (y,) = ctx.outputs(op)
    total = ctx.b.reduce_sum(g, axes=_softmax_axis(op), keep_dims=True)
    return [g - ctx.b.exp(y) * total]


@VJP.register(LayerNormOp)
def _vjp_layer_norm(ctx: VjpContext, op: LayerNormOp, g: Tensor) -> list[Tensor | None]:
    x, gamma, beta = ctx.inputs(op)
    attrs = op.py_attrs()
    return [
        ctx.b.layer_norm_backward_input(x, gamma, g, **attrs),
        ctx.b.layer_norm_backward_gamma(x, g, **attrs),
        ctx.unbroadcast(g, beta.shape),
    ]


@VJP.register(RmsNormOp)
def _vjp_rms_norm(ctx: VjpContext, op: RmsNormOp, g: Tensor) -> list[Tensor | None]:
    """x and gamma through the backward ops; the optional beta gets ``g`` summed over rows."""
    x, gamma, *beta = ctx.inputs(op)
    attrs = op.py_attrs()
    return [
        ctx.b.rms_norm_backward_input(x, gamma, g, **attrs),
        ctx.b.rms_norm_backward_gamma(x, g, **attrs),
        *(ctx.unbroadcast(g, b.shape) for b in beta),
    ]


@VJP.register(GroupNormOp)
def _vjp_group_norm(ctx: VjpContext, op: GroupNormOp, g: Tensor) -> list[Tensor | None]:
    x, gamma, _ = ctx.inputs(op)
    attrs = op.py_attrs()
    return [
        ctx.b.group_norm_backward_input(x, gamma, g, **attrs),
        ctx.b.group_norm_backward_gamma(x, g, **attrs),
        ctx.b.group_norm_backward_beta(g),
    ]


@VJP.register(BatchNormInferenceOp)
def _vjp_batch_norm(ctx: VjpContext, op: BatchNormInferenceOp,
                    g: Tensor) -> list[Tensor | None]:
    """x, gamma, beta; the frozen statistics mean and var get no gradient."""
    x, gamma, _, mean, var = ctx.inputs(op)
    attrs = op.py_attrs()
    return [
        ctx.b.batch_norm_inference_backward_input(gamma, var, g, **attrs),
        ctx.b.batch_norm_inference_backward_gamma(x, mean, var, g, **attrs),
        ctx.b.batch_norm_inference_backward_beta(g),
        None,
        None,
    ]


@VJP.register(SoftmaxCrossEntropyOp)
def _vjp_softmax_cross_entropy(ctx: VjpContext, op: SoftmaxCrossEntropyOp,
                               g: Tensor) -> list[Tensor | None]:
    logits, labels = ctx.inputs(op)
    return [ctx.b.softmax_cross_entropy_backward(logits, labels, g), None]


@VJP.register(RopeOp)
def _vjp_rope(ctx: VjpContext, op: RopeOp, g: Tensor) -> list[Tensor | None]:
    """Only x gets a gradient: rope of ``g`` with ``-sin``; the tables get none."""
    _, cos, sin = ctx.inputs(op)
    return [ctx.b.rope_backward(g, cos, sin, **op.py_attrs()), None, None]


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# The softmaxes and cross-entropy compose from primitives. A norm's input Jacobian with
# gamma = 1 is symmetric, so its tangent is the backward op applied to the tangent:
# ``J t = gamma * *_backward_input(x, 1, t)``; gamma and beta enter affinely.

from rlx_mlir.rules import JVP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.builder import Builder
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext


def emit_same(b: Builder, op: RlxOp, *operands: Tensor, **attrs: Any) -> Tensor:
    """``op`` re-emitted on ``operands`` with its attributes (overridden by ``attrs``)."""
    return b.emit(op.name.removeprefix("rlx."), *operands, **{**op.py_attrs(), **attrs})


def channel_view(b: Builder, v: Tensor, axis: int, rank: int, batched: bool = False) -> Tensor:
    """A per-channel vector ``[C]`` (``[B, C]`` when batched) shaped to broadcast against
    a rank-``rank`` operand (``[B, ...]`` when batched) whose channels are on ``axis``."""
    shape = [1] * rank
    shape[axis] = v.shape[-1]
    return b.reshape(v, (v.shape[0], *shape) if batched else shape)


def unit_params(b: Builder, op: RlxOp, gamma: Tensor) -> list[Tensor]:
    """gamma = 1 (and beta = 0 for the norms that require a beta)."""
    size = gamma.shape[-1:]  # [C] of a shared or batched [B, C] gamma
    ones = b.full(size, 1.0, gamma.dtype)
    return [ones] if isinstance(op, RmsNormOp) else [ones, b.full(size, 0.0, gamma.dtype)]


NORM_INPUT_GRAD = {
    LayerNormOp: "layer_norm_backward_input",
    RmsNormOp: "rms_norm_backward_input",
    GroupNormOp: "group_norm_backward_input",
}


def norm_channel_axis(op: RlxOp, rank: int) -> int:
    """The axis gamma and beta scale: 1 for group norms, the last one otherwise."""
    return 1 if "num_groups" in op.py_attrs() else rank - 1


@JVP.register(SoftmaxOp)
def _jvp_softmax(ctx: JvpContext, op: SoftmaxLikeOp, t: Tensor) -> list[Tensor | None]:
    """``y * (t - sum_axis(y * t))``."""
    (y,) = ctx.outputs(op)
    return [y * (t - ctx.b.reduce_sum(y * t, axes=_softmax_axis(op), keep_dims=True))]


@JVP.register(LogSoftmaxOp)
def _jvp_log_softmax(ctx: JvpContext, op: SoftmaxLikeOp, t: Tensor) -> list[Tensor | None]:
    """``t - sum_axis(softmax * t)`` (``exp(y)`` is the softmax)."""
    (y,) = ctx.outputs(op)
    return [t - ctx.b.reduce_sum(ctx.b.exp(y) * t, axes=_softmax_axis(op), keep_dims=True)]


@JVP.register(LayerNormOp, RmsNormOp, GroupNormOp)
def _jvp_norm(ctx: JvpContext, op: RlxOp, tx: Tensor | None, tgamma: Tensor | None,
              tbeta: Tensor | None = None) -> list[Tensor | None]:
    """``gamma * bwd_input(x, 1, t_x) + t_gamma * x_hat + t_beta`` (x_hat: the op with
    gamma = 1, beta = 0)."""
    x, gamma, *_ = ctx.inputs(op)
    b, rank = ctx.b, x.ndim
    axis = norm_channel_axis(op, rank)
    in_x = in_gamma = in_beta = None
    if tx is not None:
        grad = b.emit(NORM_INPUT_GRAD[type(op)], x, unit_params(b, op, gamma)[0], tx,
                      **op.py_attrs())
        in_x = channel_view(b, gamma, axis, rank) * grad
    if tgamma is not None:
        in_gamma = channel_view(b, tgamma, axis, rank) * emit_same(b, op, x,
                                                                   *unit_params(b, op, gamma))
    if tbeta is not None:
        in_beta = ctx.broadcast_to(channel_view(b, tbeta, axis, rank), x.shape)
    return [ctx.add(in_x, in_gamma, in_beta)]


@JVP.register(BatchNormInferenceOp)
def _jvp_batch_norm(ctx: JvpContext, op: BatchNormInferenceOp, tx: Tensor | None,
                    tgamma: Tensor | None, tbeta: Tensor | None, _tmean: Tensor | None,
                    _tvar: Tensor | None) -> list[Tensor | None]:
    """``t_x * gamma * s + x_hat * t_gamma + t_beta`` with ``s = 1 / sqrt(var + eps)`` and
    ``x_hat = (x - mean) * s``. The statistics are frozen, as in the VJP (SPEC Appendix
    A): their tangents are dropped, so forward and reverse mode agree."""
    x, gamma, _, mean, var = ctx.inputs(op)
    b = ctx.b
    in_x = None if tx is None else b.batch_norm_inference_backward_input(
        gamma, var, tx, **op.py_attrs())
    in_gamma = None
    if tgamma is not None:
        ones, zeros = unit_params(b, op, gamma)
        in_gamma = emit_same(b, op, x, ones, zeros, mean, var) * tgamma
    out = ctx.add(in_x, in_gamma, tbeta)
    return [None if out is None else ctx.broadcast_to(out, x.shape)]


@JVP.register(SoftmaxCrossEntropyOp)
def _jvp_softmax_cross_entropy(ctx: JvpContext, op: SoftmaxCrossEntropyOp, tz: Tensor | None,
                               _t_labels: Tensor | None) -> list[Tensor | None]:
    """``sum_k (softmax - onehot)[n, k] t[n, k]``: the backward op with d_loss = 1, dotted
    with the tangent per row (labels are piecewise constant: no tangent)."""
    if tz is None:
        return [None]
    z, labels = ctx.inputs(op)
    ones = ctx.b.full(z.shape[:1], 1.0, z.dtype)
    grad = ctx.b.softmax_cross_entropy_backward(z, labels, ones)
    return [ctx.b.reduce_sum(grad * tz, axes=[1])]


def jvp_rope_like(ctx: JvpContext, op: RlxOp, tx: Tensor | None, _tcos: Tensor | None,
                  _tsin: Tensor | None) -> list[Tensor | None]:
    """rope / rope_backward: linear in x, ``op(t_x, cos, sin)``. The tables are frozen, as
    in the VJP (SPEC 3.4, Appendix A): their tangents are dropped, so forward and reverse
    mode agree."""
    x, cos, sin = ctx.inputs(op)
    return [None if tx is None else emit_same(ctx.b, op, tx, cos, sin)]


JVP.register(RopeOp)(jvp_rope_like)


# ---------------------------------------------------------------- batching rules (SPEC 6.2)
# RLX lifts the norms' x only and panics on group/batch norm, rope and cross-entropy
# (SPEC 6.4). Here: a batched x shifts the axis (row norms) or folds B into N (group norm,
# cross-entropy, rope); batched parameters are applied after normalising with gamma = 1,
# beta = 0, as ``[B, 1.., C, 1..]`` views; nothing is unrolled.


def emit_batched(ctx: VmapContext, name: str, op: RlxOp, operands: Sequence[Tensor],
                 folded: Sequence[bool]) -> Tensor:
    """``rlx.<name>`` with ``op``'s attributes, ``x`` (operand 0) batched: group norms fold
    B into N for the ``folded`` operands (then unfold), the row norms shift their axis."""
    attrs = op.py_attrs()
    if "num_groups" in attrs:
        operands = [ctx.fold(v) if f else v for v, f in zip(operands, folded, strict=True)]
        return ctx.unfold(ctx.b.emit(name, *operands, **attrs))
    rank = len(shape_of(op.operands[0].type))
    return ctx.b.emit(name, *operands, **{**attrs,
                                          "axis": ctx.shift_axis(op.attr("axis", -1), rank)})


@VMAP.register(SoftmaxOp, LogSoftmaxOp)
def _vmap_softmax(ctx: VmapContext, op: SoftmaxLikeOp, xs: Sequence[Tensor],
                  batched: Sequence[bool]) -> list[Tensor]:
    (x,) = xs
    return ctx.emit_like(op, [x], axis=ctx.shift_axis(op.attr("axis", -1), x.ndim - 1))


@VMAP.register(LayerNormOp, RmsNormOp, GroupNormOp)
def _vmap_norm(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
               batched: Sequence[bool]) -> list[Tensor]:
    """x batched, parameters shared: the op itself; a batched gamma or beta: normalise with
    gamma = 1 (beta = 0), then scale and shift by the parameters' channel views."""
    x, gamma, *beta = xs
    name = op.name.removeprefix("rlx.")
    params = [gamma, *beta] if not any(batched[1:]) else unit_params(ctx.b, op, gamma)
    y = (emit_batched(ctx, name, op, [x, *params], [True] + [False] * len(params))
         if batched[0] else emit_same(ctx.b, op, x, *params))
    if not any(batched[1:]):
        return [y]
    rank = len(shape_of(op.operands[0].type))
    axis = norm_channel_axis(op, rank)
    for k, (p, f) in enumerate(zip(xs[1:], batched[1:], strict=True)):
        view = channel_view(ctx.b, p, axis, rank, f)
        y = y * view if k == 0 else y + view
    return [y]


def batch_norm_xhat(ctx: VmapContext, op: RlxOp, x: Tensor, mean: Tensor, var: Tensor,
                    batched: Sequence[bool]) -> Tensor:
    """``(x - mean) / sqrt(var + eps)`` for ``x [..., C]`` and per-channel statistics,
    each possibly batched (aligned to ``[B, 1.., C]``)."""
    rank = len(shape_of(op.operands[0].type))
    x, mean, var = (ctx.align(v, f, rank) for v, f in zip((x, mean, var), batched, strict=True))
    return (x - mean) / ctx.b.sqrt(var + op.attr("eps", 1e-5))


@VMAP.register(BatchNormInferenceOp)
def _vmap_batch_norm(ctx: VmapContext, op: BatchNormInferenceOp, xs: Sequence[Tensor],
                     batched: Sequence[bool]) -> list[Tensor]:
    """Channels last: a batched x works as it is; batched parameters or statistics:
    the formula on aligned operands."""
    if not any(batched[1:]):
        return ctx.emit_like(op, xs)
    x, gamma, beta, mean, var = xs
    rank = len(shape_of(op.x.type))
    xhat = batch_norm_xhat(ctx, op, x, mean, var, [batched[0], *batched[3:]])
    return [xhat * ctx.align(gamma, batched[1], rank) + ctx.align(beta, batched[2], rank)]


def vmap_fold_rows(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                   batched: Sequence[bool]) -> list[Tensor]:
    """Every operand ``[B, N, ...] -> [B*N, ...]`` (lifted first), results unfolded: for
    ops whose rows are independent (cross-entropy and its backward op)."""
    folded = [ctx.fold(v) for v in ctx.lift_all(xs, batched)]
    return [ctx.unfold(r) for r in ctx.emit_like(op, folded)]


VMAP.register(SoftmaxCrossEntropyOp)(vmap_fold_rows)


def vmap_rope_like(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                   batched: Sequence[bool]) -> list[Tensor]:
    """rope / rope_backward. Shared tables: B becomes (or folds into) x's batch dim.
    Batched tables ``[B, S, h]``: B folds into the positions, ``[B*S, h]``, with x
    ``[B, S, hid] -> [B*S, hid]`` (``[B, B0, S, hid] -> [B0, B*S, hid]``)."""
    x, cos, sin = xs
    if not (batched[1] or batched[2]):
        if x.ndim == 3:
            return [emit_same(ctx.b, op, x, cos, sin)]
        return [ctx.unfold(emit_same(ctx.b, op, ctx.fold(x), cos, sin))]
    x, cos, sin = ctx.lift_all(xs, batched)
    tables = [ctx.fold(t) for t in (cos, sin)]
    if x.ndim == 3:
        return [emit_same(ctx.b, op, ctx.fold(x), *tables).reshape(x.shape)]
    size, inner, seq, hidden = x.shape
    swapped = x.transpose(1, 0, 2, 3).reshape(inner, size * seq, hidden)
    y = emit_same(ctx.b, op, swapped, *tables).reshape(inner, size, seq, hidden)
    return [y.transpose(1, 0, 2, 3)]


VMAP.register(RopeOp)(vmap_rope_like)


# ---------------------------------------------------------------- LOWER rules
# ``rule(op, e, *operands) -> value`` (docs/lowering.md). Each norm is a few reductions
# into keep-dims row statistics (one linalg.generic with reduction iterators each, no
# temporaries for the summands) and one parallel pass; the statistics are read back with
# broadcast maps ``(d0, d1) -> (d0, 0)``. Formulas follow the interpreter rules above.

from xdsl.dialects import arith  # noqa: E402
from xdsl.dialects import tensor as tensor_dialect  # noqa: E402
from xdsl.dialects.builtin import ArrayAttr, IndexType, IntegerAttr, i64  # noqa: E402
from xdsl.dialects.linalg import ops as linalg_ops  # noqa: E402
from xdsl.ir import SSAValue  # noqa: E402
from xdsl.ir.affine import AffineExpr, AffineMap  # noqa: E402

from rlx_mlir.dialects.base import NUMPY_DTYPES, broadcast_shapes  # noqa: E402
from rlx_mlir.rules import LOWER  # noqa: E402

Init = float | SSAValue


def element_of(value: SSAValue) -> Any:
    return value.type.element_type  # type: ignore[attr-defined]


def keep_dims_shape(shape: Sequence[int], axes: Sequence[int]) -> list[int]:
    return [1 if i in axes else d for i, d in enumerate(shape)]


def fold(e: Any, inputs: Sequence[SSAValue], axes: Sequence[int], inits: Sequence[Init],
         body: Callable[..., Any], keep_dims: bool = True) -> list[SSAValue]:
    """One ``linalg.generic`` reducing ``axes`` of the NumPy-broadcast space of ``inputs``.

    ``inits`` are scalars (filled) or tensors of the reduced shape; ``body(s, *ins,
    *accs)`` returns the new accumulators. Results keep the reduced dims as size 1
    unless ``keep_dims`` is False.
    """
    shape: tuple[int, ...] = ()
    for v in inputs:
        shape = broadcast_shapes(shape, shape_of(v.type))
    kept = [i for i in range(len(shape)) if i not in axes]
    reduced = [shape[i] for i in kept]
    accs = [v if isinstance(v, SSAValue) else e.fill(v, reduced, element_of(inputs[0]))
            for v in inits]
    from rlx_mlir.lowering.emitter import broadcast_map  # here: lowering imports the dialects

    out_map = AffineMap(len(shape), 0, tuple(AffineExpr.dimension(i) for i in kept))
    maps = [broadcast_map(shape_of(v.type), shape) for v in inputs] + [out_map] * len(accs)
    iterators = ["reduction" if i in axes else "parallel" for i in range(len(shape))]
    out = e.generic(inputs, accs, maps, iterators, body)
    results = [out] if len(accs) == 1 else list(out.results)
    if not keep_dims:
        return results
    return [e.reshape(r, keep_dims_shape(shape, axes)) for r in results]


def fold_sum(e: Any, inputs: Sequence[SSAValue], axes: Sequence[int],
             term: Callable[..., Any], keep_dims: bool = True) -> SSAValue:
    """``sum over axes of term(s, *scalars)`` as one reducing generic. A long f32 sum over
    outer axes (:func:`wide_outer_sum`) accumulates in f64."""
    if not wide_outer_sum(inputs, axes):
        return fold(e, inputs, axes, [0.0],
                    lambda s, *a: s.add(a[-1], term(s, *a[:-1])), keep_dims)[0]
    shape: tuple[int, ...] = ()
    for v in inputs:
        shape = broadcast_shapes(shape, shape_of(v.type))
    acc = e.fill(0.0, [d for i, d in enumerate(shape) if i not in axes], "f64")
    total = fold(e, inputs, axes, [acc],
                 lambda s, *a: s.add(a[-1], s.cast(term(s, *a[:-1]), "f64")), keep_dims)[0]
    return e.elementwise([total], "f32", lambda s, t: s.cast(t, "f32"))


def wide_outer_sum(inputs: Sequence[SSAValue], axes: Sequence[int]) -> bool:
    """An f32 sum over axes that leave out the innermost one (so each output accumulates
    one element at a time, not in vector lanes) of ``linalg.WIDE_SUM_COUNT`` or more
    elements: a running f32 sum there drifted to 1.5e-4 relative error (softmax over
    axis 0 of ``[100001, 7]``; JAX 1e-6)."""
    from rlx_mlir.dialects.linalg import WIDE_SUM_COUNT

    shape: tuple[int, ...] = ()
    for v in inputs:
        shape = broadcast_shapes(shape, shape_of(v.type))
    count = int(np.prod([shape[a] for a in axes]))
    return (dtype_of(inputs[0].type) == "f32" and len(shape) - 1 not in axes
            and count >= WIDE_SUM_COUNT)


def count_of(shape: Sequence[int], axes: Sequence[int]) -> float:
    return float(np.prod([shape[a] for a in axes]))


def norm_stats(e: Any, x: SSAValue, axes: Sequence[int], eps: float,
               centered: bool) -> tuple[SSAValue | None, SSAValue]:
    """``(mean or None, sqrt(mean(xc^2) + eps))`` over ``axes``, keep-dims.

    ``xc = x - mean`` when ``centered`` (layer/group norm), else ``x`` (RMS norm).
    """
    count, dtype = count_of(shape_of(x.type), axes), element_of(x)
    mean = None
    if centered:
        total = fold_sum(e, [x], axes, lambda s, v: v)
        mean = e.elementwise([total], dtype, lambda s, t: s.div(t, count))
    centred = [x, mean] if mean is not None else [x]
    square_sum = fold_sum(e, centred, axes, square_of_centred)
    denom = e.elementwise([square_sum], dtype,
                          lambda s, t: s.sqrt(s.add(s.div(t, count), eps)))
    return mean, denom


def centre(s: Any, x: SSAValue, *mean: SSAValue) -> SSAValue:
    """``x - mean`` in a body, or ``x`` when no mean is passed (RMS norm)."""
    return s.sub(x, mean[0]) if mean else x


def square_of_centred(s: Any, x: SSAValue, *mean: SSAValue) -> SSAValue:
    c = centre(s, x, *mean)
    return s.mul(c, c)


def normalize(e: Any, x: SSAValue, axes: Sequence[int], eps: float, centered: bool,
              params: Sequence[SSAValue]) -> SSAValue:
    """``xc * (1 / sqrt(mean(xc^2) + eps)) * gamma (+ beta)``, the inverse once per row
    (:func:`per_row`); ``params`` broadcast against x."""
    mean, denom = norm_stats(e, x, axes, eps, centered)
    means = [] if mean is None else [mean]
    inverse = per_row(e, denom, lambda s, d: s.div(1.0, d))

    def body(s: Any, v: Any, inv: Any, *rest: Any) -> Any:
        gamma, *beta = rest[len(means):]
        y = s.mul(s.mul(centre(s, v, *rest[: len(means)]), inv), gamma)
        return s.add(y, beta[0]) if beta else y

    return e.elementwise([x, inverse, *means, *params], element_of(x), body)


def per_row(e: Any, stats: SSAValue, body: Callable[[Any, Any], Any]) -> SSAValue:
    """``body(s, v)`` of each element of ``stats`` (a row statistic, keep-dims), in a
    generic that elementwise fusion leaves alone: a unit reduction loop over an unread
    ``[1]`` operand keeps it from being folded into its consumer, where the body ran for
    every element instead of once per row (a ``sqrt`` and two ``div`` per element:
    layer_norm of ``[64, 512, 768]`` by blocks of rows 5.6 -> 4.7 ms, torch 4.4; softmax
    of ``[64, 8, 128, 128]`` 3.0 -> 2.3 ms, torch 2.0)."""
    rank, dtype = len(shape_of(stats.type)), element_of(stats)
    dims = tuple(AffineExpr.dimension(i) for i in range(rank))
    maps = [AffineMap(rank + 1, 0, dims), AffineMap(rank + 1, 0, (AffineExpr.dimension(rank),)),
            AffineMap(rank + 1, 0, dims)]
    return e.generic([stats, e.empty((1,), dtype)], [e.empty(shape_of(stats.type), dtype)],
                     maps, ["parallel"] * rank + ["reduction"],
                     lambda s, v, _unread, _out: body(s, v))


def split_channels(e: Any, x: SSAValue, groups: int) -> SSAValue:
    """``[N, C, ...]`` viewed as ``[N, G, C/G, ...]`` (``tensor.expand_shape`` of dim 1)."""
    shape = shape_of(x.type)
    out = [shape[0], groups, shape[1] // groups, *shape[2:]]
    reassociation = [[0], [1, 2], *([i + 1] for i in range(2, len(shape)))]
    attr = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in reassociation])
    return e.emit(tensor_dialect.ExpandShapeOp(x, [], attr, out, tensor(out, dtype_of(x.type))))


def per_channel(e: Any, vector: SSAValue, groups: int, spatial_rank: int) -> SSAValue:
    """A ``[C]`` vector as ``[G, C/G, 1, ...]``: broadcasts against the grouped view."""
    channels = shape_of(vector.type)[0]
    return e.reshape(vector, [groups, channels // groups, *[1] * spatial_rank])


def last_axis(x: SSAValue) -> list[int]:
    """``[rank - 1]``: the axis a row norm normalises."""
    return [len(shape_of(x.type)) - 1]


def group_axes(x: SSAValue) -> list[int]:
    """Normalised axes of the grouped view ``[N, G, C/G, ...]`` of ``x [N, C, ...]``."""
    return list(range(2, len(shape_of(x.type)) + 1))


def over_std(s: Any, num: Any, var: Any, eps: float) -> Any:
    """``num / sqrt(var + eps)`` in a body (batch norm's frozen statistics)."""
    return s.div(num, s.sqrt(s.add(var, eps)))


ROW_BLOCK_MIN_BYTES = 1 << 22
"""A row op (softmax, layer / RMS norm over the last axis) in a function body whose input
has this many bytes or more runs block of rows by block of rows (:func:`by_row_blocks`):
its passes over a block (max, sum, normalise) then read it from cache instead of
streaming the whole tensor from memory once per pass."""
ROW_BLOCK_BYTES = 1 << 15
"""Bytes of input per block of rows (within L1), at least one row."""


def by_row_blocks(op: Any, e: Any, x: SSAValue, axes: Sequence[int],
                  lower_rows: Callable[[Any, SSAValue, list[int]], SSAValue]) -> SSAValue:
    """``lower_rows(emitter, x, axes)``, block of rows by block of rows when ``x`` is big
    (:data:`ROW_BLOCK_MIN_BYTES`), reduced over its last axis only, and its first dim
    splits evenly over the threads: ``x [..., S, D]`` viewed as ``[..., S / b, b, D]``
    (``[R, D]`` as ``[R / b, b, D]``), each block lowered alone inside a parallel loop (a
    chunk of the first dim per thread, an ``scf.for`` over the rest), the result viewed
    back (one reshape each way, so the output is still written in place). ``[64, 512,
    768]`` f32, 2 threads: layer_norm 8.1 -> 4.9 ms (torch 4.2), rms_norm 6.9 -> 4.9.

    >>> by_row_blocks(op, e, x, [2], _softmax_rows)   # doctest: +SKIP
    """
    from xdsl.dialects import func

    from rlx_mlir.lowering import forall as F
    from rlx_mlir.lowering.schedules import num_threads

    shape, dtype = list(shape_of(x.type)), element_of(x)
    if len(shape) < 2 or list(axes) != [len(shape) - 1]:
        return lower_rows(e, x, list(axes))
    row_bytes = shape[-1] * np.dtype(NUMPY_DTYPES[dtype_of(x.type)]).itemsize
    block = max([b for b in range(1, shape[-2] + 1) if shape[-2] % b == 0
                 and b * row_bytes <= ROW_BLOCK_BYTES] or [1])
    view = [*shape[:-2], shape[-2] // block, block, shape[-1]]
    if (int(np.prod(shape[:-1])) * row_bytes < ROW_BLOCK_MIN_BYTES or view[0] % num_threads()
            or not isinstance(op.parent_op(), func.FuncOp)):
        return lower_rows(e, x, list(axes))
    blocks, inner = e.reshape(x, view), view[1:-2]  # inner: the block indices after the first

    def one(t: Any, ivs: Sequence[SSAValue]) -> list[tuple[SSAValue, list]]:
        at = [ivs[0], *_unravel(t, ivs[1], inner), 0, 0]
        part = F.slice_of(t, blocks, at, [1] * (len(view) - 2) + view[-2:])
        return [(lower_rows(t, part, [len(view) - 1]), at)]

    out = F.chunked_forall(e, num_threads(), [view[0], int(np.prod(inner))],
                           [e.empty(view, dtype)], one)[0]
    return e.reshape(out, shape)


def _unravel(e: Any, flat: SSAValue, dims: Sequence[int]) -> list[Any]:
    """The indices into ``dims`` (row-major) of the flat index ``flat``."""
    from xdsl.dialects import arith

    from rlx_mlir.lowering.regions import index, index_floordiv

    out = []
    for k in range(len(dims)):
        stride = int(np.prod(dims[k + 1:]))
        value = index_floordiv(e, flat, stride) if stride > 1 else flat
        out.append(e.emit(arith.RemUIOp(value, index(e, dims[k]))) if k else value)
    return out


def _softmax_rows(e: Any, x: SSAValue, axes: list[int]) -> SSAValue:
    """Row max, ``sum(exp(x - max))``, then ``exp(x - max) * (1 / sum)`` (exp recomputed,
    the inverse once per row)."""
    peak = e.reduce(x, axes, -np.inf, lambda s, v, acc: s.max(v, acc), keep_dims=True)
    total = fold_sum(e, [x, peak], axes, lambda s, v, m: s.exp(s.sub(v, m)))
    inverse = per_row(e, total, lambda s, t: s.div(1.0, t))
    return e.elementwise([x, peak, inverse], element_of(x),
                         lambda s, v, m, inv: s.mul(s.exp(s.sub(v, m)), inv))


def _log_softmax_rows(e: Any, x: SSAValue, axes: list[int]) -> SSAValue:
    """``(x - max) - log(sum(exp(x - max)))``, the log once per row."""
    peak = e.reduce(x, axes, -np.inf, lambda s, v, acc: s.max(v, acc), keep_dims=True)
    total = fold_sum(e, [x, peak], axes, lambda s, v, m: s.exp(s.sub(v, m)))
    log_total = per_row(e, total, lambda s, t: s.log(t))
    return e.elementwise([x, peak, log_total], element_of(x),
                         lambda s, v, m, lt: s.sub(s.sub(v, m), lt))


@LOWER.register(SoftmaxOp)
def _lower_softmax(op: SoftmaxLikeOp, e: Any, x: SSAValue) -> SSAValue:
    return by_row_blocks(op, e, x, _softmax_axis(op), _softmax_rows)


@LOWER.register(LogSoftmaxOp)
def _lower_log_softmax(op: SoftmaxLikeOp, e: Any, x: SSAValue) -> SSAValue:
    return by_row_blocks(op, e, x, _softmax_axis(op), _log_softmax_rows)


@LOWER.register(LayerNormOp)
def _lower_layer_norm(op: LayerNormOp, e: Any, x: SSAValue, gamma: SSAValue,
                      beta: SSAValue) -> SSAValue:
    eps = op.attr("eps", 1e-5)
    return by_row_blocks(op, e, x, last_axis(x),
                         lambda t, rows, axes: normalize(t, rows, axes, eps, True, [gamma, beta]))


@LOWER.register(RmsNormOp)
def _lower_rms_norm(op: RmsNormOp, e: Any, x: SSAValue, *params: SSAValue) -> SSAValue:
    eps = op.attr("eps", 1e-6)
    return by_row_blocks(op, e, x, last_axis(x),
                         lambda t, rows, axes: normalize(t, rows, axes, eps, False, params))


@LOWER.register(GroupNormOp)
def _lower_group_norm(op: GroupNormOp, e: Any, x: SSAValue, gamma: SSAValue,
                      beta: SSAValue) -> SSAValue:
    """On the view ``[N, G, C/G, ...]``, normalised over every axis from 2 on."""
    groups, rank = op.attr("num_groups"), len(shape_of(x.type))
    grouped = split_channels(e, x, groups)
    params = [per_channel(e, p, groups, rank - 2) for p in (gamma, beta)]
    y = normalize(e, grouped, group_axes(x), op.attr("eps", 1e-5), True, params)
    return e.reshape(y, shape_of(x.type))


@LOWER.register(BatchNormInferenceOp)
def _lower_batch_norm(op: BatchNormInferenceOp, e: Any, x: SSAValue, *stats: SSAValue) -> SSAValue:
    """``(x - mean) / sqrt(var + eps) * gamma + beta`` in one parallel pass."""
    eps = op.attr("eps", 1e-5)

    def body(s: Any, v: Any, gamma: Any, beta: Any, mean: Any, var: Any) -> Any:
        return s.add(s.mul(over_std(s, s.sub(v, mean), var, eps), gamma), beta)

    return e.elementwise([x, *stats], element_of(x), body)


# -- softmax_cross_entropy


def label_hit(s: Any, label: SSAValue, classes: int, class_dim: int) -> tuple[Any, Any]:
    """``(valid, label == class index)`` as i1 in a body (float labels truncate to 0).

    ``valid`` is ``0 <= trunc(label) < classes`` (false for NaN); an invalid label hits
    no class.
    """
    valid, index = label_index(s, label, classes)
    return valid, s.emit(arith.AndIOp(valid, s.cmp("eq", index_i64(s, class_dim), index)))


def label_index(s: Any, label: SSAValue, classes: int) -> tuple[Any, Any]:
    """``(valid, trunc(label) as i64)`` in a body: ``valid`` is ``0 <= trunc(label) <
    classes`` (false for NaN); an invalid float label's index is 0."""
    if s.is_float(label):
        valid = s.emit(arith.AndIOp(s.cmp("gt", label, -1.0), s.cmp("lt", label, classes)))
        return valid, s.emit(arith.FPToSIOp(s.select(valid, label, 0.0), i64))
    valid = s.emit(arith.AndIOp(s.cmp("ge", label, 0), s.cmp("lt", label, classes)))
    return valid, s.cast(label, i64)


def index_i64(s: Any, dim: int) -> SSAValue:
    """``linalg.index dim`` as i64 (body scalar helpers take integer types, not index)."""
    return s.index(dim)


def row_softmax_stats(e: Any, logits: SSAValue, keep_dims: bool) -> tuple[SSAValue, SSAValue]:
    """``(row max, sum(exp(z - max)))`` of ``[N, C]`` logits."""
    peak = e.reduce(logits, [1], -np.inf, lambda s, v, acc: s.max(v, acc), keep_dims=True)
    total = fold_sum(e, [logits, peak], [1], lambda s, v, m: s.exp(s.sub(v, m)), keep_dims)
    rows = shape_of(logits.type)[:1]
    return (peak if keep_dims else e.reshape(peak, rows)), total


@LOWER.register(SoftmaxCrossEntropyOp)
def _lower_softmax_cross_entropy(op: SoftmaxCrossEntropyOp, e: Any, logits: SSAValue,
                                 labels: SSAValue) -> SSAValue:
    """``log(sum(exp(z - max))) - (z[label] - max)``: the row max and the exp-sum are
    single-result reductions (vectorized), and ``z[label]`` is read by one gather per row
    (``-max`` is what an out-of-range label picks). A [512, 32000] loss with its gradient:
    66 -> 11 ms on 2 threads: the exp-sum and the pick as one two-result reduction were
    left to scalar loops."""
    rows, classes = shape_of(logits.type)
    dtype = element_of(logits)
    peak, total = row_softmax_stats(e, logits, keep_dims=False)

    def pick(s: Any, label: Any, m: Any, _out: Any) -> Any:
        valid, index = label_index(s, label, classes)
        column = s.emit(arith.IndexCastOp(s.select(valid, index, 0), IndexType()))
        z = s.emit(tensor_dialect.ExtractOp(logits, [s.emit(linalg_ops.IndexOp(0)), column],
                                            dtype))
        return s.select(valid, s.sub(z, m), s.neg(m))

    picked = e.generic([labels, peak], [e.empty([rows], dtype)],
                       [AffineMap.identity(1)] * 3, ["parallel"], pick)
    return e.elementwise([total, picked], dtype, lambda s, t, p: s.sub(s.log(t), p))


# -- rope


def rope_lowering(e: Any, x: SSAValue, cos: SSAValue, sin: SSAValue, head_dim: int,
                  n_rot: int, signs: tuple[float, float]) -> SSAValue:
    """Rotate-half rope on the view ``[..., S, H, 2, half]`` of the rotated dims.

    ``y[.., p, i] = own c_i + signs[p] * other s_i`` with ``own, other`` the halves
    ``x[.., p, i], x[.., 1 - p, i]``: both halves are read with constant maps
    ``(.., 0, i)``, ``(.., 1, i)`` and swapped by ``linalg.index p`` (a ``1 - p`` map
    would have a negative coefficient, which linalg tiling rejects). Dims ``n_rot ..``
    of each head pass through (the rotated slice is inserted into x).
    """
    shape, half = shape_of(x.type), n_rot // 2
    heads = [*shape[:-1], shape[-1] // head_dim]
    x4 = e.reshape(x, [*heads, head_dim])
    rotated = x4 if n_rot == head_dim else e.extract_slice(
        x4, [0] * len(shape) + [0], [*heads, n_rot])
    view = split_last(e, rotated, [2, half])
    tables = [t if half == head_dim // 2 else e.extract_slice(t, [0, 0], [shape[-2], half])
              for t in (cos, sin)]
    rank = len(shape) + 2

    def body(s: Any, first: Any, second: Any, c: Any, sn: Any, _out: Any) -> Any:
        is_first = s.cmp("eq", index_i64(s, rank - 2), 0)
        own, other = s.select(is_first, first, second), s.select(is_first, second, first)
        sign = s.select(is_first, s.scalar(signs[0], c.type), signs[1])
        return s.add(s.mul(own, c), s.mul(sign, s.mul(other, sn)))

    y = e.generic([view, view, *tables], [e.empty(shape_of(view.type), element_of(x))],
                  rope_maps(rank), ["parallel"] * rank, body)
    y = merge_last(e, y, 2)
    if n_rot != head_dim:
        y = e.insert_slice(y, x4, [0] * (len(shape) + 1))
    return e.reshape(y, shape)


def rope_maps(rank: int) -> list[AffineMap]:
    """Maps of (first half, second half, cos, sin, y) over ``[..., S, H, 2, half]``."""
    d = [AffineExpr.dimension(i) for i in range(rank)]
    pair, seq = rank - 2, rank - 4

    def half_map(p: int) -> AffineMap:
        return AffineMap(rank, 0, (*d[:pair], AffineExpr.constant(p), d[-1]))

    table = AffineMap(rank, 0, (d[seq], d[-1]))
    return [half_map(0), half_map(1), table, table, AffineMap.identity(rank)]


def split_last(e: Any, x: SSAValue, sizes: Sequence[int]) -> SSAValue:
    """The last dim of ``x`` split into ``sizes`` (``tensor.expand_shape``; any layout)."""
    shape = shape_of(x.type)
    out = [*shape[:-1], *sizes]
    groups = [[i] for i in range(len(shape) - 1)] + [list(range(len(shape) - 1, len(out)))]
    attr = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])
    return e.emit(tensor_dialect.ExpandShapeOp(x, [], attr, out, tensor(out, dtype_of(x.type))))


def merge_last(e: Any, x: SSAValue, count: int) -> SSAValue:
    """The last ``count`` dims of ``x`` merged (``tensor.collapse_shape``)."""
    shape = shape_of(x.type)
    lead = len(shape) - count
    out = [*shape[:lead], int(np.prod(shape[lead:]))]
    groups = [[i] for i in range(lead)] + [list(range(lead, len(shape)))]
    attr = ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])
    op = tensor_dialect.CollapseShapeOp.create(
        operands=[x], result_types=[tensor(out, dtype_of(x.type))],
        properties={"reassociation": attr})
    return e.emit(op)


@LOWER.register(RopeOp)
def _lower_rope(op: RopeOp, e: Any, x: SSAValue, cos: SSAValue, sin: SSAValue) -> SSAValue:
    head_dim = op.attr("head_dim")
    return rope_lowering(e, x, cos, sin, head_dim, op.attr("n_rot", head_dim), (-1.0, 1.0))
