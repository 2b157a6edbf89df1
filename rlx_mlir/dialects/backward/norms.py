"""Normalisation and rope backward ops (SPEC 3.2-3.4, rows 3-14 of SPEC 3).

Each op recomputes the statistics it needs from the forward input ``x`` (nothing is
saved from the forward pass) and keeps only the operands its math reads::

    %dx = rlx.layer_norm_backward_input %x, %g, %dy {eps = 1.0e-05 : f32}
            : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %dg = rlx.layer_norm_backward_gamma %x, %dy : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>

The scale/shift gradients (``*_gamma``, ``*_beta``) are ``[D]`` or ``[C]``, the only
shape the forward ops accept for gamma and beta, so they are inferred.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    define_op,
    dtype_of,
    expect_float,
    expect_rank,
    shape_of,
    tensor,
)
from rlx_mlir.dialects.nn import (
    LAST_AXIS_DOC,
    channel_broadcast,
    check_eps,
    check_groups,
    check_rope,
    check_rows,
    check_vectors,
    eps_doc,
    rotate_half,
    row_moments,
)
from rlx_mlir.rules import INTERPRET, VJP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext

# ---------------------------------------------------------------- shared checks and math


def expect_like(op_name: str, name: str, want: TensorType, got: TensorType, of: str) -> None:
    """``got`` (operand ``name``) must have exactly the type ``want`` (that of ``of``)."""
    if got != want:
        raise ShapeError(f"'{op_name}' {name} must have the type of {of} ({want}), got {got}")


def normalize_rows(x: np.ndarray, eps: float, centered: bool) -> tuple[np.ndarray, np.ndarray]:
    """``(x_hat, inv)`` over the last axis: ``inv = 1/sqrt(mean(xc^2) + eps)``.

    ``xc`` is ``x - mean(x)`` when ``centered`` (layer/group norm), else ``x`` (RMS norm).
    """
    xc, square_mean = row_moments(x, centered)
    inv = 1.0 / np.sqrt(square_mean + eps)
    return xc * inv, inv


def normalized_input_grad(gg: np.ndarray, x_hat: np.ndarray, inv: np.ndarray,
                          centered: bool) -> np.ndarray:
    """``inv * (gg - mean(gg) - x_hat * mean(gg * x_hat))`` per row (SPEC 3.2, 3.3).

    ``gg = dy * gamma``; the ``mean(gg)`` term only when ``centered``.
    """
    shift = gg.mean(axis=-1, keepdims=True) if centered else 0.0
    return inv * (gg - shift - x_hat * (gg * x_hat).mean(axis=-1, keepdims=True))


def sum_but_last(a: np.ndarray) -> np.ndarray:
    """Sum over every axis but the last: ``[..., D] -> [D]``."""
    return a.reshape(-1, a.shape[-1]).sum(axis=0)


def sum_but_channel(a: np.ndarray) -> np.ndarray:
    """Sum over every axis but axis 1: ``[N, C, ...] -> [C]``."""
    return a.swapaxes(0, 1).reshape(a.shape[1], -1).sum(axis=1)


# ---------------------------------------------------------------- layer/rms norm (+ group bases)

CheckX = Callable[[str, TensorType, dict[str, Any], float], tuple[str, int, str]]


def check_row_x(op_name: str, x: TensorType, attrs: dict[str, Any],
                eps: float) -> tuple[str, int, str]:
    """``(dtype, D, where D comes from)`` of a last-axis norm's ``x`` (see check_rows)."""
    dtype, shape = check_rows(op_name, x, attrs, eps)
    return dtype, shape[-1], "the last dim of x"


def check_group_x(op_name: str, x: TensorType, attrs: dict[str, Any],
                  eps: float) -> tuple[str, int, str]:
    """``(dtype, C, where C comes from)`` of a group norm's ``x`` (eps defaults to 1e-5)."""
    dtype, channels = check_groups(op_name, x, attrs)
    return dtype, channels, "one per channel, dim 1 of x"


class NormBackward(RlxOp):
    """Constants shared by the layer/RMS/group norm backward ops."""

    CENTERED: ClassVar[bool]
    EPS: ClassVar[float]
    CHECK_X: ClassVar[CheckX] = staticmethod(check_row_x)


class NormBackwardInput(NormBackward):
    """``dx`` of a layer/RMS/group norm from ``x, gamma, dy`` (beta does not enter it)."""

    x = operand_def(TensorType)
    gamma = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, attrs, out):
        x, gamma, dy = types
        dtype, size, reason = cls.CHECK_X(cls.name, x, attrs, cls.EPS)
        check_vectors(cls.name, dtype, size, reason, [("gamma", gamma)])
        expect_like(cls.name, "dy", x, dy, "x")
        return [x]


class NormBackwardGamma(NormBackward):
    """``dgamma = sum_rows(dy * x_hat)`` of a layer/RMS/group norm: ``x, dy -> [C]``."""

    x = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)

    @classmethod
    def infer(cls, types, attrs, out):
        x, dy = types
        dtype, size, _ = cls.CHECK_X(cls.name, x, attrs, cls.EPS)
        expect_like(cls.name, "dy", x, dy, "x")
        return [tensor((size,), dtype)]


def _row_norm_attrs(eps: float) -> dict[str, str]:
    return {"axis": LAST_AXIS_DOC, "eps": eps_doc(eps)}


LayerNormBackwardInputOp = define_op(
    "LayerNormBackwardInputOp", NormBackwardInput, "rlx.layer_norm_backward_input",
    """``dx`` of ``rlx.layer_norm``: ``inv * (g - mean(g) - x_hat * mean(g * x_hat))``
    per row, ``g = dy * gamma`` (SPEC 3.2). Operands ``x, gamma, dy``.

    Example::

        %dx = rlx.layer_norm_backward_input %x, %g, %dy {eps = 1.0e-05 : f32}
                : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    """,
    CENTERED=True, EPS=1e-5, ATTRS=_row_norm_attrs(1e-5),
)
LayerNormBackwardGammaOp = define_op(
    "LayerNormBackwardGammaOp", NormBackwardGamma, "rlx.layer_norm_backward_gamma",
    """``dgamma`` of ``rlx.layer_norm``: ``sum_rows(dy * x_hat)``, ``[D]``. Operands ``x, dy``.

    Example::

        %dg = rlx.layer_norm_backward_gamma %x, %dy
                : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
    """,
    CENTERED=True, EPS=1e-5, ATTRS=_row_norm_attrs(1e-5),
)
RmsNormBackwardInputOp = define_op(
    "RmsNormBackwardInputOp", NormBackwardInput, "rlx.rms_norm_backward_input",
    """``dx`` of ``rlx.rms_norm``: ``r * (g - x_hat * mean(g * x_hat))`` per row,
    ``r = rsqrt(mean(x^2) + eps)``, ``x_hat = x r``, ``g = dy * gamma`` (SPEC 3.3).
    Operands ``x, gamma, dy`` (beta does not enter it).

    Example::

        %dx = rlx.rms_norm_backward_input %x, %g, %dy
                : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    """,
    CENTERED=False, EPS=1e-6, ATTRS=_row_norm_attrs(1e-6),
)
RmsNormBackwardGammaOp = define_op(
    "RmsNormBackwardGammaOp", NormBackwardGamma, "rlx.rms_norm_backward_gamma",
    """``dgamma`` of ``rlx.rms_norm``: ``sum_rows(dy * x * r)``, ``[D]``. Operands ``x, dy``.

    Example::

        %dg = rlx.rms_norm_backward_gamma %x, %dy {eps = 1.0e-06 : f32}
                : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8xf32>
    """,
    CENTERED=False, EPS=1e-6, ATTRS=_row_norm_attrs(1e-6),
)


@INTERPRET.register(LayerNormBackwardInputOp, RmsNormBackwardInputOp)
def _interpret_row_norm_input(op: NormBackwardInput, x: np.ndarray, gamma: np.ndarray,
                              dy: np.ndarray) -> np.ndarray:
    centered = type(op).CENTERED
    x_hat, inv = normalize_rows(x, op.attr("eps", type(op).EPS), centered)
    return normalized_input_grad(dy * gamma, x_hat, inv, centered)


@INTERPRET.register(LayerNormBackwardGammaOp, RmsNormBackwardGammaOp)
def _interpret_row_norm_gamma(op: NormBackwardGamma, x: np.ndarray,
                              dy: np.ndarray) -> np.ndarray:
    x_hat, _ = normalize_rows(x, op.attr("eps", type(op).EPS), type(op).CENTERED)
    return sum_but_last(dy * x_hat)


# ---------------------------------------------------------------- group_norm


GROUP_NORM_ATTRS = {"num_groups": "i64, required; positive and divides C", "eps": eps_doc(1e-5)}


GroupNormBackwardInputOp = define_op(
    "GroupNormBackwardInputOp", NormBackwardInput, "rlx.group_norm_backward_input",
    """``dx`` of ``rlx.group_norm``: the layer-norm closed form over each (sample, group)
    set, with ``g = dy * gamma[c]``. Operands ``x, gamma, dy`` (beta does not enter it).

    Example::

        %dx = rlx.group_norm_backward_input %x, %g, %dy {num_groups = 2 : i64}
                : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
    """,
    CENTERED=True, EPS=1e-5, ATTRS=GROUP_NORM_ATTRS, CHECK_X=staticmethod(check_group_x),
)
GroupNormBackwardGammaOp = define_op(
    "GroupNormBackwardGammaOp", NormBackwardGamma, "rlx.group_norm_backward_gamma",
    """``dgamma[c]`` of ``rlx.group_norm``: ``sum_{n, spatial} dy * x_hat``, ``[C]``.
    Operands ``x, dy``.

    Example::

        %dg = rlx.group_norm_backward_gamma %x, %dy {num_groups = 2 : i64}
                : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<4xf32>
    """,
    CENTERED=True, EPS=1e-5, ATTRS=GROUP_NORM_ATTRS, CHECK_X=staticmethod(check_group_x),
)


class BetaBackward(RlxOp):
    """``dbeta[c]``: ``dy`` summed over every axis but the channel one, ``[C]``.

    ``CHANNELS(op_name, dy)`` checks ``dy`` (a float tensor) and returns its C.
    """

    dy = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {}
    CHANNELS: ClassVar[Callable[[str, TensorType], int]]

    @classmethod
    def infer(cls, types, attrs, out):
        channels = cls.CHANNELS(cls.name, types[0])
        return [tensor((channels,), dtype_of(types[0]))]


def _group_channels(op_name: str, dy: TensorType) -> int:
    """Dim 1 (C) of a float ``dy [N, C, ...]``."""
    expect_float(dy, f"'{op_name}' operand dy")
    return expect_rank(dy, (3, 4), f"'{op_name}' operand dy ([N, C, ...])")[1]


GroupNormBackwardBetaOp = define_op(
    "GroupNormBackwardBetaOp", BetaBackward, "rlx.group_norm_backward_beta",
    """``dbeta[c]`` of ``rlx.group_norm``: ``sum_{n, spatial} dy``, ``[C]``. Operand ``dy``
    only (SPEC's unused x is dropped; the grouping does not matter).

    Example::

        %db = rlx.group_norm_backward_beta %dy : (tensor<2x4x3xf32>) -> tensor<4xf32>
    """,
    CHANNELS=staticmethod(_group_channels),
)


def _grouped_norm(op: RlxOp, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(x_hat, inv)`` of ``x`` viewed as ``[N, G, C/G * spatial]``."""
    grouped = x.reshape(x.shape[0], op.attr("num_groups"), -1)
    return normalize_rows(grouped, op.attr("eps", 1e-5), centered=True)


@INTERPRET.register(GroupNormBackwardInputOp)
def _interpret_group_norm_input(op: GroupNormBackwardInputOp, x: np.ndarray,
                                gamma: np.ndarray, dy: np.ndarray) -> np.ndarray:
    x_hat, inv = _grouped_norm(op, x)
    gg = (dy * channel_broadcast(gamma, x.ndim)).reshape(x_hat.shape)
    return normalized_input_grad(gg, x_hat, inv, centered=True).reshape(x.shape)


@INTERPRET.register(GroupNormBackwardGammaOp)
def _interpret_group_norm_gamma(op: GroupNormBackwardGammaOp, x: np.ndarray,
                                dy: np.ndarray) -> np.ndarray:
    x_hat, _ = _grouped_norm(op, x)
    return sum_but_channel(dy * x_hat.reshape(x.shape))


@INTERPRET.register(GroupNormBackwardBetaOp)
def _interpret_group_norm_beta(op: GroupNormBackwardBetaOp, dy: np.ndarray) -> np.ndarray:
    return sum_but_channel(dy)


# ---------------------------------------------------------------- batch_norm_inference


def _channels(op_name: str, t: TensorType, name: str) -> int:
    """The last (channel) dim of a float operand ``t``."""
    expect_float(t, f"'{op_name}' operand {name}")
    shape = shape_of(t)
    if not shape:
        raise ShapeError(f"'{op_name}' operand {name} needs a channel (last) axis, got {t}")
    return shape[-1]


@irdl_op_definition
class BatchNormInferenceBackwardInputOp(RlxOp):
    """``dx`` of ``rlx.batch_norm_inference`` (frozen statistics):
    ``dy * gamma[c] / sqrt(var[c] + eps)``. Operands ``gamma, var, dy`` (x and mean do
    not enter it); the result has dy's type.

    Example::

        %dx = rlx.batch_norm_inference_backward_input %g, %v, %dy {eps = 1.0e-05 : f32}
                : (tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>) -> tensor<2x5x3xf32>
    """

    name = "rlx.batch_norm_inference_backward_input"
    gamma = operand_def(TensorType)
    var = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"eps": eps_doc(1e-5)}

    @classmethod
    def infer(cls, types, attrs, out):
        gamma, var, dy = types
        channels = _channels(cls.name, dy, "dy")
        check_eps(attrs, 1e-5)
        check_vectors(cls.name, dtype_of(dy), channels, "one per channel, the last dim of dy",
                      [("gamma", gamma), ("var", var)])
        return [dy]


@irdl_op_definition
class BatchNormInferenceBackwardGammaOp(RlxOp):
    """``dgamma[c]`` of ``rlx.batch_norm_inference``:
    ``sum_{all but last} dy * (x - mean[c]) / sqrt(var[c] + eps)``, ``[C]``.
    Operands ``x, mean, var, dy``.

    Example::

        %dg = rlx.batch_norm_inference_backward_gamma %x, %m, %v, %dy
                : (tensor<2x5x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x5x3xf32>)
                -> tensor<3xf32>
    """

    name = "rlx.batch_norm_inference_backward_gamma"
    x = operand_def(TensorType)
    mean = operand_def(TensorType)
    var = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {"eps": eps_doc(1e-5)}

    @classmethod
    def infer(cls, types, attrs, out):
        x, mean, var, dy = types
        channels = _channels(cls.name, x, "x")
        check_eps(attrs, 1e-5)
        dtype = dtype_of(x)
        check_vectors(cls.name, dtype, channels, "one per channel, the last dim of x",
                      [("mean", mean), ("var", var)])
        expect_like(cls.name, "dy", x, dy, "x")
        return [tensor((channels,), dtype)]


BatchNormInferenceBackwardBetaOp = define_op(
    "BatchNormInferenceBackwardBetaOp", BetaBackward, "rlx.batch_norm_inference_backward_beta",
    """``dbeta[c]`` of ``rlx.batch_norm_inference``: ``dy`` summed over all but the last
    axis, ``[C]``. Operand ``dy``.

    Example::

        %db = rlx.batch_norm_inference_backward_beta %dy : (tensor<2x5x3xf32>) -> tensor<3xf32>
    """,
    CHANNELS=staticmethod(lambda op_name, dy: _channels(op_name, dy, "dy")),
)


@INTERPRET.register(BatchNormInferenceBackwardInputOp)
def _interpret_batch_norm_input(op: BatchNormInferenceBackwardInputOp, gamma: np.ndarray,
                                var: np.ndarray, dy: np.ndarray) -> np.ndarray:
    return dy * gamma / np.sqrt(var + op.attr("eps", 1e-5))


@INTERPRET.register(BatchNormInferenceBackwardGammaOp)
def _interpret_batch_norm_gamma(op: BatchNormInferenceBackwardGammaOp, x: np.ndarray,
                                mean: np.ndarray, var: np.ndarray,
                                dy: np.ndarray) -> np.ndarray:
    return sum_but_last(dy * (x - mean) / np.sqrt(var + op.attr("eps", 1e-5)))


@INTERPRET.register(BatchNormInferenceBackwardBetaOp)
def _interpret_batch_norm_beta(op: BatchNormInferenceBackwardBetaOp,
                               dy: np.ndarray) -> np.ndarray:
    return sum_but_last(dy)


# ---------------------------------------------------------------- rope


@irdl_op_definition
class RopeBackwardOp(RlxOp):
    """``dx`` of ``rlx.rope``: rope of ``dy`` with ``sin`` negated (SPEC 3.4), i.e.
    ``dx[i] = dy[i] c_i + dy[half+i] s_i``, ``dx[half+i] = dy[half+i] c_i - dy[i] s_i``;
    dims ``n_rot ..`` pass through. Same table indexing as the forward (no wrapping,
    SPEC 9.28). Operands ``dy, cos, sin``.

    Example::

        %dx = rlx.rope_backward %dy, %c, %s {head_dim = 4 : i64}
                : (tensor<1x3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<1x3x8xf32>
    """

    name = "rlx.rope_backward"
    dy = operand_def(TensorType)
    cos = operand_def(TensorType)
    sin = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "head_dim": "i64, required; positive, even, divides the last dim of dy",
        "n_rot": "i64, default head_dim; positive, even, <= head_dim (rotated dims per head)",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        return [check_rope(cls.name, *types, attrs, x_name="dy")]


@INTERPRET.register(RopeBackwardOp)
def _interpret_rope_backward(op: RopeBackwardOp, dy: np.ndarray, cos: np.ndarray,
                             sin: np.ndarray) -> np.ndarray:
    head_dim = op.attr("head_dim")
    return rotate_half(dy, cos, -sin, head_dim, op.attr("n_rot", head_dim))


@VJP.register(RopeBackwardOp)
def _vjp_rope_backward(ctx: VjpContext, op: RopeBackwardOp, g: Tensor) -> list[Tensor | None]:
    """rope_backward is linear in dy with the transposed rotation: its VJP is rope."""
    _, cos, sin = ctx.inputs(op)
    return [ctx.b.rope(g, cos, sin, **op.py_attrs()), None, None]


OPS = [
    LayerNormBackwardInputOp, LayerNormBackwardGammaOp, RmsNormBackwardInputOp,
    RmsNormBackwardGammaOp, GroupNormBackwardInputOp, GroupNormBackwardGammaOp,
    GroupNormBackwardBetaOp, BatchNormInferenceBackwardInputOp,
    BatchNormInferenceBackwardGammaOp, BatchNormInferenceBackwardBetaOp, RopeBackwardOp,
]


# ---------------------------------------------------------------- LOWER rules
# Statistics as reducing generics (rlx_mlir.dialects.nn.fold), then one parallel pass;
# ``x_hat = xc * inv`` and ``g = dy * gamma`` are recomputed where they are consumed.

from xdsl.ir import SSAValue  # noqa: E402

from rlx_mlir.dialects.nn import (  # noqa: E402
    centre,
    count_of,
    element_of,
    fold,
    fold_sum,
    group_axes,
    last_axis,
    norm_stats,
    over_std,
    per_channel,
    rope_lowering,
    split_channels,
)
from rlx_mlir.rules import LOWER  # noqa: E402


def inverse_stats(e: Any, x: SSAValue, axes: list[int], eps: float,
                  centered: bool) -> list[SSAValue]:
    """``[inv, *mean]`` keep-dims: ``inv = 1 / sqrt(mean(xc^2) + eps)`` (normalize_rows)."""
    mean, denom = norm_stats(e, x, axes, eps, centered)
    inv = e.elementwise([denom], element_of(x), lambda s, d: s.div(1.0, d))
    return [inv] if mean is None else [inv, mean]


def x_hat(s: Any, x: Any, inv: Any, *mean: Any) -> Any:
    return s.mul(centre(s, x, *mean), inv)


def norm_input_grad(e: Any, x: SSAValue, gamma: SSAValue, dy: SSAValue, axes: list[int],
                    eps: float, centered: bool) -> SSAValue:
    """``inv * (g - mean(g) - x_hat * mean(g * x_hat))``, ``g = dy * gamma``; the
    ``mean(g)`` term only when ``centered`` (normalized_input_grad)."""
    stats = inverse_stats(e, x, axes, eps, centered)
    count, dtype = count_of(shape_of(x.type), axes), element_of(x)

    def sum_g(s: Any, xv: Any, dyv: Any, g: Any, *rest: Any) -> Any:
        return s.add(rest[-1], s.mul(dyv, g))

    def sum_g_x_hat(s: Any, xv: Any, dyv: Any, g: Any, *rest: Any) -> Any:
        stat, acc = rest[: len(stats)], rest[-1]
        return s.add(acc, s.mul(s.mul(dyv, g), x_hat(s, xv, *stat)))

    # one reduction per total: a two-result reduction is not vectorized (the scalar loop
    # took 0.42 ms on [8, 256, 256]; two vectorized passes take ~0.1)
    terms = [sum_g, sum_g_x_hat] if centered else [sum_g_x_hat]
    totals = [fold(e, [x, dy, gamma, *stats], axes, [0.0], term)[0] for term in terms]
    means = [e.elementwise([t], dtype, lambda s, t: s.div(t, count)) for t in totals]

    def grad(s: Any, xv: Any, dyv: Any, g: Any, *rest: Any) -> Any:
        stat, mean_terms = rest[: len(stats)], rest[len(stats):]
        gg = s.mul(dyv, g)
        shifted = s.sub(gg, mean_terms[0]) if centered else gg
        return s.mul(stat[0], s.sub(shifted, s.mul(x_hat(s, xv, *stat), mean_terms[-1])))

    return e.elementwise([x, dy, gamma, *stats, *means], dtype, grad)


def norm_gamma_grad(e: Any, x: SSAValue, dy: SSAValue, axes: list[int], eps: float,
                    centered: bool, summed: list[int]) -> SSAValue:
    """``sum over summed axes of dy * x_hat`` (statistics over ``axes``)."""
    stats = inverse_stats(e, x, axes, eps, centered)
    return fold_sum(e, [x, dy, *stats], summed,
                    lambda s, xv, dyv, *stat: s.mul(dyv, x_hat(s, xv, *stat)), keep_dims=False)


def all_but_last(x: SSAValue) -> list[int]:
    return list(range(len(shape_of(x.type)) - 1))


@LOWER.register(LayerNormBackwardInputOp, RmsNormBackwardInputOp)
def _lower_row_norm_input(op: NormBackwardInput, e: Any, x: SSAValue, gamma: SSAValue,
                          dy: SSAValue) -> SSAValue:
    kind = type(op)
    return norm_input_grad(e, x, gamma, dy, last_axis(x), op.attr("eps", kind.EPS),
                           kind.CENTERED)


@LOWER.register(LayerNormBackwardGammaOp, RmsNormBackwardGammaOp)
def _lower_row_norm_gamma(op: NormBackwardGamma, e: Any, x: SSAValue,
                          dy: SSAValue) -> SSAValue:
    kind = type(op)
    return norm_gamma_grad(e, x, dy, last_axis(x), op.attr("eps", kind.EPS), kind.CENTERED,
                           all_but_last(x))


@LOWER.register(GroupNormBackwardInputOp)
def _lower_group_norm_input(op: GroupNormBackwardInputOp, e: Any, x: SSAValue,
                            gamma: SSAValue, dy: SSAValue) -> SSAValue:
    groups = op.attr("num_groups")
    rank = len(shape_of(x.type))
    grad = norm_input_grad(e, split_channels(e, x, groups), per_channel(e, gamma, groups, rank - 2),
                           split_channels(e, dy, groups), group_axes(x), op.attr("eps", 1e-5),
                           True)
    return e.reshape(grad, shape_of(x.type))


@LOWER.register(GroupNormBackwardGammaOp)
def _lower_group_norm_gamma(op: GroupNormBackwardGammaOp, e: Any, x: SSAValue,
                            dy: SSAValue) -> SSAValue:
    """Per channel: the view's axes 1, 2 stay; N and the spatial axes are summed."""
    groups = op.attr("num_groups")
    axes = group_axes(x)
    grad = norm_gamma_grad(e, split_channels(e, x, groups), split_channels(e, dy, groups), axes,
                           op.attr("eps", 1e-5), True, [0, *axes[1:]])
    return e.reshape(grad, shape_of(x.type)[1:2])


@LOWER.register(GroupNormBackwardBetaOp)
def _lower_group_norm_beta(op: GroupNormBackwardBetaOp, e: Any, dy: SSAValue) -> SSAValue:
    channel_free = [a for a in range(len(shape_of(dy.type))) if a != 1]
    return e.reduce(dy, channel_free, 0.0, lambda s, v, acc: s.add(acc, v))


@LOWER.register(BatchNormInferenceBackwardInputOp)
def _lower_batch_norm_input(op: BatchNormInferenceBackwardInputOp, e: Any, gamma: SSAValue,
                            var: SSAValue, dy: SSAValue) -> SSAValue:
    eps = op.attr("eps", 1e-5)
    return e.elementwise([dy, gamma, var], element_of(dy),
                         lambda s, d, g, v: over_std(s, s.mul(d, g), v, eps))


@LOWER.register(BatchNormInferenceBackwardGammaOp)
def _lower_batch_norm_gamma(op: BatchNormInferenceBackwardGammaOp, e: Any, x: SSAValue,
                            mean: SSAValue, var: SSAValue, dy: SSAValue) -> SSAValue:
    eps = op.attr("eps", 1e-5)

    def term(s: Any, xv: Any, m: Any, v: Any, d: Any) -> Any:
        return over_std(s, s.mul(d, s.sub(xv, m)), v, eps)

    return fold_sum(e, [x, mean, var, dy], all_but_last(x), term, keep_dims=False)


@LOWER.register(BatchNormInferenceBackwardBetaOp)
def _lower_batch_norm_beta(op: BatchNormInferenceBackwardBetaOp, e: Any,
                           dy: SSAValue) -> SSAValue:
    return e.reduce(dy, all_but_last(dy), 0.0, lambda s, v, acc: s.add(acc, v))


@LOWER.register(RopeBackwardOp)
def _lower_rope_backward(op: RopeBackwardOp, e: Any, dy: SSAValue, cos: SSAValue,
                         sin: SSAValue) -> SSAValue:
    """Rope with ``sin`` negated: the partner term's signs flip to ``(+1, -1)``."""
    head_dim = op.attr("head_dim")
    return rope_lowering(e, dy, cos, sin, head_dim, op.attr("n_rot", head_dim), (1.0, -1.0))


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# Needed for Hessian-vector products (jvp of a gradient). Each op is linear in dy (and,
# through ``g = dy * gamma``, in gamma); the x-derivative of the input gradients is
# derived on the rows view (``[N, G, C/G * spatial]`` for group norm):
#   ``t_xhat = inv * (t_c - x_hat * a)``, ``a = mean(x_hat * t)``, ``t_c = t - mean(t)``
#   (``t`` for RMS), ``m = mean(g * x_hat)``,
#   ``t_dx = -inv * (a * dx + t_xhat * m + x_hat * mean(g * t_xhat))``.


from rlx_mlir.dialects.nn import (  # noqa: E402
    batch_norm_xhat,
    channel_view,
    emit_batched,
    emit_same,
    jvp_rope_like,
    vmap_rope_like,
)
from rlx_mlir.dialects.shape import linear  # noqa: E402
from rlx_mlir.rules import JVP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext

GROUP_OPS = (GroupNormBackwardInputOp, GroupNormBackwardGammaOp, GroupNormBackwardBetaOp)


def centered_eps(op: RlxOp) -> tuple[bool, float]:
    """(centered, eps) of a norm backward op: RMS norm is the uncentered one."""
    kind = type(op)
    default = getattr(kind, "EPS", 1e-5)
    return getattr(kind, "CENTERED", True), op.attr("eps", default)


def rows_view(op: RlxOp, v: Tensor) -> Tensor:
    """``v`` as the rows the statistics run over: ``[N, G, -1]`` for group norm."""
    if isinstance(op, GROUP_OPS):
        return v.reshape(v.shape[0], op.attr("num_groups"), -1)
    return v


def row_stats(x: Tensor, centered: bool, eps: float) -> tuple[Tensor, Tensor]:
    """``(x_hat, inv)`` over the last axis, keep-dims (as normalize_rows)."""
    last = x.ndim - 1
    xc = x - x.mean(axis=last, keepdims=True) if centered else x
    inv = x.builder.rsqrt((xc * xc).mean(axis=last, keepdims=True) + eps)
    return xc * inv, inv


def row_mean(v: Tensor) -> Tensor:
    """Mean over the last axis, keep-dims."""
    return v.mean(axis=v.ndim - 1, keepdims=True)


def input_grad_tangent(x: Tensor, g: Tensor, dx: Tensor, t: Tensor, centered: bool,
                       eps: float) -> Tensor:
    """Tangent along ``t`` (of x) of ``dx = inv (g - mean(g) - x_hat mean(g x_hat))``."""
    x_hat, inv = row_stats(x, centered, eps)
    a = row_mean(x_hat * t)
    t_xhat = inv * ((t - row_mean(t) if centered else t) - x_hat * a)
    return -inv * (a * dx + t_xhat * row_mean(g * x_hat) + x_hat * row_mean(g * t_xhat))


def channel_axis(op: RlxOp, rank: int) -> int:
    """The per-channel axis of x or dy: 1 for group norm, the last one otherwise."""
    return 1 if isinstance(op, GROUP_OPS) else rank - 1


@JVP.register(LayerNormBackwardInputOp, RmsNormBackwardInputOp, GroupNormBackwardInputOp)
def _jvp_norm_input(ctx: JvpContext, op: RlxOp, tx: Tensor | None, tgamma: Tensor | None,
                    tdy: Tensor | None) -> list[Tensor | None]:
    x, gamma, dy = ctx.inputs(op)
    (dx,) = ctx.outputs(op)
    b = ctx.b
    in_dy = None if tdy is None else emit_same(b, op, x, gamma, tdy)
    in_gamma = None if tgamma is None else emit_same(b, op, x, tgamma, dy)
    in_x = None
    if tx is not None:
        g = dy * channel_view(b, gamma, channel_axis(op, x.ndim), x.ndim)
        rows = [rows_view(op, v) for v in (x, g, dx, tx)]
        in_x = input_grad_tangent(*rows, *centered_eps(op)).reshape(x.shape)
    return [ctx.add(in_dy, in_gamma, in_x)]


NORM_INPUT_OF_GAMMA = {
    LayerNormBackwardGammaOp: "layer_norm_backward_input",
    RmsNormBackwardGammaOp: "rms_norm_backward_input",
    GroupNormBackwardGammaOp: "group_norm_backward_input",
}


def sum_but_channel_axis(v: Tensor, axis: int) -> Tensor:
    """``v`` summed over every axis but ``axis`` (kept dims dropped)."""
    axes = [a for a in range(v.ndim) if a != axis]
    return v.builder.reduce_sum(v, axes=axes) if axes else v


@JVP.register(LayerNormBackwardGammaOp, RmsNormBackwardGammaOp, GroupNormBackwardGammaOp)
def _jvp_norm_gamma(ctx: JvpContext, op: RlxOp, tx: Tensor | None,
                    tdy: Tensor | None) -> list[Tensor | None]:
    """``sum(t_dy * x_hat) + sum(dy * t_xhat)``; ``t_xhat`` is the input-gradient op with
    gamma = 1 applied to ``t_x`` (the normalisation's Jacobian is symmetric)."""
    x, dy = ctx.inputs(op)
    b = ctx.b
    in_dy = None if tdy is None else emit_same(b, op, x, tdy)
    in_x = None
    if tx is not None:
        ones = b.full(shape_of(op.results[0].type), 1.0, x.dtype)
        t_xhat = b.emit(NORM_INPUT_OF_GAMMA[type(op)], x, ones, tx, **op.py_attrs())
        in_x = sum_but_channel_axis(dy * t_xhat, channel_axis(op, x.ndim))
    return [ctx.add(in_dy, in_x)]


JVP.register(GroupNormBackwardBetaOp, BatchNormInferenceBackwardBetaOp)(linear)


def var_factor(op: RlxOp, var: Tensor, tvar: Tensor | None) -> Tensor | None:
    """``d/dvar`` of ``1 / sqrt(var + eps)`` relative to it, along ``t_var``."""
    return None if tvar is None else tvar * -0.5 / (var + op.attr("eps", 1e-5))


@JVP.register(BatchNormInferenceBackwardInputOp)
def _jvp_batch_norm_input(ctx: JvpContext, op: RlxOp, tgamma: Tensor | None,
                          tvar: Tensor | None, tdy: Tensor | None) -> list[Tensor | None]:
    """``dy * gamma * s``: linear in dy and gamma; ``s`` scales by ``-t_var / (2 (var+eps))``."""
    gamma, var, dy = ctx.inputs(op)
    (dx,) = ctx.outputs(op)
    in_dy = None if tdy is None else emit_same(ctx.b, op, gamma, var, tdy)
    in_gamma = None if tgamma is None else emit_same(ctx.b, op, tgamma, var, dy)
    factor = var_factor(op, var, tvar)
    return [ctx.add(in_dy, in_gamma, None if factor is None else dx * factor)]


@JVP.register(BatchNormInferenceBackwardGammaOp)
def _jvp_batch_norm_gamma(ctx: JvpContext, op: RlxOp, tx: Tensor | None, tmean: Tensor | None,
                          tvar: Tensor | None, tdy: Tensor | None) -> list[Tensor | None]:
    """``sum(dy (x - mean) s)``: linear in dy and in ``x - mean``; var as in the input op."""
    x, mean, var, dy = ctx.inputs(op)
    (dgamma,) = ctx.outputs(op)
    b = ctx.b
    in_dy = None if tdy is None else emit_same(b, op, x, mean, var, tdy)
    in_shift = None
    if tx is not None or tmean is not None:
        in_shift = emit_same(b, op, ctx.or_zeros(tx, x), ctx.or_zeros(tmean, mean), var, dy)
    factor = var_factor(op, var, tvar)
    return [ctx.add(in_dy, in_shift, None if factor is None else dgamma * factor)]


JVP.register(RopeBackwardOp)(jvp_rope_like)


# ---------------------------------------------------------------- batching rules (SPEC 6.2)
# RLX lifts the layer-norm ones only (making dgamma per sample) and panics on the rest
# (SPEC 6.4). Input gradients: a batched gamma is folded into dy (``g = dy * gamma``, then
# gamma = 1); x and dy are lifted and the op runs with its axis shifted (row norms) or B
# folded into N (group norm). Parameter gradients sum over rows, so B is never folded into
# the rows: they are composed per sample (``x_hat`` from the forward op, summed over every
# axis but B and the channel axis).

NORM_OF = {
    LayerNormBackwardInputOp: "layer_norm", LayerNormBackwardGammaOp: "layer_norm",
    RmsNormBackwardInputOp: "rms_norm", RmsNormBackwardGammaOp: "rms_norm",
    GroupNormBackwardInputOp: "group_norm", GroupNormBackwardGammaOp: "group_norm",
}


@VMAP.register(LayerNormBackwardInputOp, RmsNormBackwardInputOp, GroupNormBackwardInputOp)
def _vmap_norm_input(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                     batched: Sequence[bool]) -> list[Tensor]:
    x, gamma, dy = xs
    rank = len(shape_of(op.operands[0].type))
    if batched[1]:
        dy = dy * channel_view(ctx.b, gamma, channel_axis(op, rank), rank, batched=True)
        gamma = ctx.b.full(gamma.shape[1:], 1.0, gamma.dtype)
    x, dy = ctx.lift(x, batched[0]), ctx.lift(dy, dy.ndim > rank)
    return [emit_batched(ctx, op.name.removeprefix("rlx."), op, [x, gamma, dy],
                         [True, False, True])]


def per_sample_sum(ctx: VmapContext, v: Tensor, op: RlxOp, rank: int) -> Tensor:
    """``[B, *shape] -> [B, C]``: summed over every axis but B and the channel axis."""
    keep = channel_axis(op, rank) + 1
    axes = [a for a in range(1, rank + 1) if a != keep]
    return ctx.b.reduce_sum(v, axes=axes) if axes else v


@VMAP.register(LayerNormBackwardGammaOp, RmsNormBackwardGammaOp, GroupNormBackwardGammaOp)
def _vmap_norm_gamma(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                     batched: Sequence[bool]) -> list[Tensor]:
    """``sum_rows(dy * x_hat)`` per sample, ``x_hat`` by the forward op (gamma = 1, beta = 0)."""
    x, dy = ctx.lift_all(xs, batched)
    rank = x.ndim - 1
    size = shape_of(op.results[0].type)
    params = [ctx.b.full(size, 1.0, x.dtype)]
    if NORM_OF[type(op)] != "rms_norm":
        params.append(ctx.b.full(size, 0.0, x.dtype))
    x_hat = emit_batched(ctx, NORM_OF[type(op)], op, [x, *params],
                         [True] + [False] * len(params))
    return [per_sample_sum(ctx, dy * x_hat, op, rank)]


@VMAP.register(GroupNormBackwardBetaOp, BatchNormInferenceBackwardBetaOp)
def _vmap_sum_beta(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                   batched: Sequence[bool]) -> list[Tensor]:
    (dy,) = xs
    return [per_sample_sum(ctx, dy, op, dy.ndim - 1)]


@VMAP.register(BatchNormInferenceBackwardInputOp)
def _vmap_batch_norm_input(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                           batched: Sequence[bool]) -> list[Tensor]:
    """Shared gamma and var: the op itself (channels last); else the formula, aligned."""
    if not (batched[0] or batched[1]):
        return ctx.emit_like(op, xs)
    rank = len(shape_of(op.results[0].type))
    gamma, var, dy = (ctx.align(v, f, rank) for v, f in zip(xs, batched, strict=True))
    return [dy * gamma / ctx.b.sqrt(var + op.attr("eps", 1e-5))]


@VMAP.register(BatchNormInferenceBackwardGammaOp)
def _vmap_batch_norm_gamma(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                           batched: Sequence[bool]) -> list[Tensor]:
    """``sum(dy * (x - mean) / sqrt(var + eps))`` per sample."""
    x, mean, var, dy = xs
    rank = len(shape_of(op.operands[0].type))
    x_hat = batch_norm_xhat(ctx, op, x, mean, var, batched[:3])
    return [per_sample_sum(ctx, ctx.align(dy, batched[3], rank) * x_hat, op, rank)]


VMAP.register(RopeBackwardOp)(vmap_rope_like)


# ---------------------------------------------------------------- VJP rules (second order)
# Needed for grad of grad. On the rows view, ``dx = J g`` with ``g = dy * gamma`` and
# ``J = d x_hat / dx = inv (I - 1 1^T / D - x_hat x_hat^T / D)`` symmetric (RMS: no
# ``1 1^T / D``), so ``J w`` is the input op with gamma = 1 applied to the cotangent ``w``. Transposing the
# JVP's x-term (``a = mean(x_hat t)``) gives, per row,
#   ``w_x = -inv * (mean(w dx) x_hat + mean(g x_hat) J w + mean(w x_hat) dx)``.
# Everything else is linear: the parameter gradients ``sum_rows(dy * x_hat)`` give x the
# input op with gamma = the cotangent, and dy the forward norm with gamma = the cotangent.


def input_grad_cotangent(x: Tensor, g: Tensor, dx: Tensor, w: Tensor, jw: Tensor,
                         centered: bool, eps: float) -> Tensor:
    """x's cotangent of ``dx = J g`` for the cotangent ``w`` (``jw = J w``), rows view."""
    x_hat, inv = row_stats(x, centered, eps)
    return -inv * (row_mean(w * dx) * x_hat + row_mean(g * x_hat) * jw + row_mean(w * x_hat) * dx)


@VJP.register(LayerNormBackwardInputOp, RmsNormBackwardInputOp, GroupNormBackwardInputOp)
def _vjp_norm_input(ctx: VjpContext, op: RlxOp, w: Tensor) -> list[Tensor | None]:
    """x as above; with ``J w`` (gamma = 1): gamma gets ``sum_rows(dy J w)``, dy ``gamma J w``."""
    x, gamma, dy = ctx.inputs(op)
    (dx,) = ctx.outputs(op)
    b = ctx.b
    axis = channel_axis(op, x.ndim)
    jw = emit_same(b, op, x, b.full(gamma.shape, 1.0, gamma.dtype), w)
    scale = channel_view(b, gamma, axis, x.ndim)
    rows = [rows_view(op, v) for v in (x, dy * scale, dx, w, jw)]
    in_x = input_grad_cotangent(*rows, *centered_eps(op)).reshape(x.shape)
    return [in_x, sum_but_channel_axis(dy * jw, axis), jw * scale]


@VJP.register(LayerNormBackwardGammaOp, RmsNormBackwardGammaOp, GroupNormBackwardGammaOp)
def _vjp_norm_gamma(ctx: VjpContext, op: RlxOp, v: Tensor) -> list[Tensor | None]:
    """``sum_rows(dy * x_hat)``: x gets the input op with gamma = ``v`` (``J (dy v)``),
    dy gets ``x_hat * v``, the forward norm with gamma = ``v`` (beta = 0)."""
    x, dy = ctx.inputs(op)
    b = ctx.b
    norm = NORM_OF[type(op)]
    beta = [] if norm == "rms_norm" else [ctx.zeros(v.shape, v.dtype)]
    return [b.emit(NORM_INPUT_OF_GAMMA[type(op)], x, v, dy, **op.py_attrs()),
            b.emit(norm, x, v, *beta, **op.py_attrs())]


@VJP.register(GroupNormBackwardBetaOp, BatchNormInferenceBackwardBetaOp)
def _vjp_sum_beta(ctx: VjpContext, op: RlxOp, v: Tensor) -> list[Tensor | None]:
    """A per-channel sum of dy: ``v`` broadcast back along the channel axis."""
    shape = shape_of(op.operands[0].type)
    return [ctx.b.expand(channel_view(ctx.b, v, channel_axis(op, len(shape)), len(shape)),
                         shape)]


@VJP.register(BatchNormInferenceBackwardInputOp)
def _vjp_batch_norm_input(ctx: VjpContext, op: RlxOp, w: Tensor) -> list[Tensor | None]:
    """``dx = dy gamma s``, ``s = rsqrt(var + eps)``: gamma gets ``sum(w dy) s``, var
    ``sum(w dx) * -1 / (2 (var + eps))``, dy the op itself on ``w``."""
    gamma, var, dy = ctx.inputs(op)
    (dx,) = ctx.outputs(op)
    last = dy.ndim - 1
    s = ctx.b.rsqrt(var + op.attr("eps", 1e-5))
    return [sum_but_channel_axis(w * dy, last) * s,
            var_factor(op, var, sum_but_channel_axis(w * dx, last)),
            emit_same(ctx.b, op, gamma, var, w)]


@VJP.register(BatchNormInferenceBackwardGammaOp)
def _vjp_batch_norm_gamma(ctx: VjpContext, op: RlxOp, v: Tensor) -> list[Tensor | None]:
    """``sum(dy (x - mean) s)``: x gets ``dy v s`` (the input op with gamma = ``v``), mean
    minus its channel sums, dy ``(x - mean) v s``; var as in the input op."""
    x, mean, var, dy = ctx.inputs(op)
    (dgamma,) = ctx.outputs(op)
    b = ctx.b
    in_x = b.batch_norm_inference_backward_input(v, var, dy, **op.py_attrs())
    in_dy = b.batch_norm_inference_backward_input(v, var, x - mean, **op.py_attrs())
    return [in_x, -sum_but_channel_axis(in_x, x.ndim - 1), var_factor(op, var, v * dgamma),
            in_dy]
