"""Conv family: 2-D convolution and max/avg pooling on NCHW tensors (SPEC 2.1.15-2.1.16).

::

    %y = rlx.conv2d %x, %w, %b {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}
        : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x4x4xf32>
    %p = rlx.max_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>

The numpy helpers (:func:`conv_output_size`, :func:`pad_nchw`, :func:`window_view`,
:func:`col2im`, :func:`conv2d_config`, :func:`pool2d_config`) are shared with the
conv/pool backward ops.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, result_def

from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    define_op,
    expect_float,
    expect_rank,
    expect_same_dtype,
    fmt_shape,
    optional,
    require,
    shape_of,
    tensor,
)
from rlx_mlir.rules import INTERPRET

Pair = tuple[int, int]

# ---------------------------------------------------------------- attributes


def pair_attr(attrs: Mapping[str, Any], name: str, default: Pair | None, minimum: int) -> Pair:
    """An ``array<i64: a, b>`` attribute with both entries ``>= minimum``.

    ``pair_attr({"stride": (2, 1)}, "stride", (1, 1), 1) == (2, 1)``; ``default=None``
    makes the attribute required.
    """
    value = require(attrs, name, tuple) if default is None else optional(
        attrs, name, tuple, default
    )
    if len(value) != 2:
        raise ShapeError(f"attribute '{name}' must have 2 entries (h, w), got {fmt_shape(value)}")
    if min(value) < minimum:
        raise ShapeError(f"attribute '{name}' entries must be >= {minimum}, got {fmt_shape(value)}")
    return (int(value[0]), int(value[1]))


class Conv2dConfig(NamedTuple):
    """The attributes of ``rlx.conv2d`` (and its backward ops), defaults filled in."""

    stride: Pair = (1, 1)
    padding: Pair = (0, 0)
    dilation: Pair = (1, 1)
    groups: int = 1


class Pool2dConfig(NamedTuple):
    """The attributes of the pools (and max_pool2d_backward), defaults filled in."""

    kernel: Pair
    stride: Pair
    padding: Pair


def conv2d_config(attrs: Mapping[str, Any]) -> Conv2dConfig:
    """Validated conv attributes: ``conv2d_config({"groups": 2}).stride == (1, 1)``."""
    groups = optional(attrs, "groups", int, 1)
    if groups < 1:
        raise ShapeError(f"attribute 'groups' must be >= 1, got {groups}")
    return Conv2dConfig(
        stride=pair_attr(attrs, "stride", (1, 1), 1),
        padding=pair_attr(attrs, "padding", (0, 0), 0),
        dilation=pair_attr(attrs, "dilation", (1, 1), 1),
        groups=groups,
    )


def pool2d_config(attrs: Mapping[str, Any]) -> Pool2dConfig:
    """Validated pool attributes; ``stride`` defaults to ``kernel``, each pad <= kernel/2.

    ``pool2d_config({"kernel": (2, 2)}) == Pool2dConfig((2, 2), (2, 2), (0, 0))``
    """
    kernel = pair_attr(attrs, "kernel", None, 1)
    cfg = Pool2dConfig(
        kernel=kernel,
        stride=pair_attr(attrs, "stride", kernel, 1),
        padding=pair_attr(attrs, "padding", (0, 0), 0),
    )
    if any(2 * p > k for p, k in zip(cfg.padding, kernel, strict=True)):
        raise ShapeError(
            f"padding {fmt_shape(cfg.padding)} must be at most half the kernel "
            f"{fmt_shape(kernel)}"
        )
    return cfg


# ---------------------------------------------------------------- shape rules


def conv_output_size(size: int, kernel: int, stride: int, padding: int, dilation: int = 1) -> int:
    """``floor((size + 2 padding - dilation (kernel - 1) - 1) / stride) + 1``.

    ``conv_output_size(8, 3, 2, 1) == 4``
    """
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def spatial_output(hw: Sequence[int], kernel: Sequence[int], stride: Pair, padding: Pair,
                   dilation: Pair = (1, 1)) -> Pair:
    """``(H_out, W_out)``; ShapeError when either is < 1."""
    out = tuple(
        conv_output_size(*args)
        for args in zip(hw, kernel, stride, padding, dilation, strict=True)
    )
    if min(out) < 1:
        raise ShapeError(
            f"output spatial size {fmt_shape(out)} is < 1 for input {fmt_shape(hw)}, "
            f"kernel {fmt_shape(kernel)}, stride {fmt_shape(stride)}, "
            f"padding {fmt_shape(padding)}, dilation {fmt_shape(dilation)}"
        )
    return out  # type: ignore[return-value]


def conv2d_shape(x: Sequence[int], w: Sequence[int], cfg: Conv2dConfig) -> tuple[int, ...]:
    """The ``[N, C_out, H_out, W_out]`` of conv2d; ShapeError on mismatched x/w/groups."""
    n, c_in, h, wd = x
    c_out, c_per_group, kh, kw = w
    g = cfg.groups
    if c_in % g or c_out % g:
        raise ShapeError(
            f"groups {g} must divide both C_in {c_in} and C_out {c_out}"
        )
    if c_per_group != c_in // g:
        raise ShapeError(
            f"weight {fmt_shape(w)} must have C_in/groups = {c_in // g} input channels "
            f"(x {fmt_shape(x)}, groups {g}), got {c_per_group}"
        )
    if min(kh, kw) < 1:
        raise ShapeError(f"kernel size must be >= 1, got weight {fmt_shape(w)}")
    return (n, c_out, *spatial_output((h, wd), (kh, kw), cfg.stride, cfg.padding, cfg.dilation))


# ---------------------------------------------------------------- numpy helpers


def pad_nchw(x: np.ndarray, padding: Pair, value: float = 0.0) -> np.ndarray:
    """Pad the last two axes symmetrically: ``[N, C, H, W] -> [N, C, H+2ph, W+2pw]``."""
    ph, pw = padding
    if ph == pw == 0:
        return x
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), constant_values=value)


def window_view(xp: np.ndarray, kernel: Pair, stride: Pair, dilation: Pair = (1, 1)
                ) -> np.ndarray:
    """Read-only im2col view of a padded ``[N, C, Hp, Wp]``: ``[N, C, H_out, W_out, kH, kW]``.

    ``view[n, c, i, j, ki, kj] == xp[n, c, i*sh + ki*dh, j*sw + kj*dw]``.
    """
    n, c, hp, wp = xp.shape
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    ho = conv_output_size(hp, kh, sh, 0, dh)
    wo = conv_output_size(wp, kw, sw, 0, dw)
    s_n, s_c, s_h, s_w = xp.strides
    return np.lib.stride_tricks.as_strided(
        xp,
        shape=(n, c, ho, wo, kh, kw),
        strides=(s_n, s_c, s_h * sh, s_w * sw, s_h * dh, s_w * dw),
        writeable=False,
    )


def col2im(cols: np.ndarray, hw: Pair, stride: Pair, padding: Pair,
           dilation: Pair = (1, 1)) -> np.ndarray:
    """Adjoint of ``window_view(pad_nchw(x))``: scatter-add ``[N, C, Ho, Wo, kH, kW]``
    columns back onto an unpadded ``[N, C, H, W]`` (out-of-bounds taps are dropped)."""
    n, c, ho, wo, kh, kw = cols.shape
    (ph, pw), (sh, sw), (dh, dw) = padding, stride, dilation
    out = np.zeros((n, c, hw[0] + 2 * ph, hw[1] + 2 * pw), cols.dtype)
    for ki in range(kh):
        for kj in range(kw):
            rows = slice(ki * dh, ki * dh + sh * (ho - 1) + 1, sh)
            columns = slice(kj * dw, kj * dw + sw * (wo - 1) + 1, sw)
            out[:, :, rows, columns] += cols[..., ki, kj]
    return out[:, :, ph:ph + hw[0], pw:pw + hw[1]]


def conv2d_numpy(x: np.ndarray, w: np.ndarray, cfg: Conv2dConfig,
                 bias: np.ndarray | None = None) -> np.ndarray:
    """Grouped, strided, dilated, zero-padded NCHW x OIHW convolution (cross-correlation)."""
    g = cfg.groups
    cols = window_view(pad_nchw(x, cfg.padding), w.shape[2:], cfg.stride, cfg.dilation)
    n, c_in, ho, wo, kh, kw = cols.shape
    grouped_cols = cols.reshape(n, g, c_in // g, ho, wo, kh, kw)
    grouped_w = w.reshape(g, w.shape[0] // g, *w.shape[1:])
    y = np.einsum("ngchwij,gocij->ngohw", grouped_cols, grouped_w, optimize=True)
    y = y.reshape(n, w.shape[0], ho, wo)
    return y if bias is None else y + bias.reshape(1, -1, 1, 1)


# ---------------------------------------------------------------- conv2d


@irdl_op_definition
class Conv2dOp(RlxOp):
    """2-D cross-correlation of ``x [N, C_in, H, W]`` with ``w [C_out, C_in/groups, kH, kW]``,
    plus an optional ``bias [C_out]``; symmetric zero padding.

    ``H_out = floor((H + 2 ph - dh (kH - 1) - 1) / sh) + 1`` (the same for W).

    Example::

        %y = rlx.conv2d %x, %w {groups = 2 : i64, padding = array<i64: 1, 1>}
            : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x5x5xf32>
    """

    name = "rlx.conv2d"
    x = operand_def(TensorType)
    w = operand_def(TensorType)
    bias = opt_operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = {
        "stride": "array<i64: sh, sw>, default [1, 1]",
        "padding": "array<i64: ph, pw>, symmetric zero padding, default [0, 0]",
        "dilation": "array<i64: dh, dw>, default [1, 1]",
        "groups": "i64, default 1; divides C_in and C_out",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        cfg = conv2d_config(attrs)
        x = expect_rank(types[0], (4,), "input x [N, C_in, H, W]")
        w = expect_rank(types[1], (4,), "weight w [C_out, C_in/groups, kH, kW]")
        dtype = expect_float(types[0], "input x")
        expect_same_dtype(types, "'rlx.conv2d' operands")
        if len(types) == 3 and shape_of(types[2]) != (w[0],):
            raise ShapeError(f"bias must have shape [{w[0]}] (C_out), got {types[2]}")
        return [tensor(conv2d_shape(x, w, cfg), dtype)]


@INTERPRET.register(Conv2dOp)
def _interpret_conv2d(op: Conv2dOp, x: np.ndarray, w: np.ndarray,
                      bias: np.ndarray | None = None) -> np.ndarray:
    return conv2d_numpy(x, w, conv2d_config(op.py_attrs()), bias)


# ---------------------------------------------------------------- pools


class Pool2dOp(RlxOp):
    """A 2-D pool of ``x [N, C, H, W]`` over ``kernel`` windows (no dilation)."""

    x = operand_def(TensorType)
    result = result_def(TensorType)
    POOL_FN: ClassVar[Callable[[np.ndarray, Pool2dConfig], np.ndarray]]
    ATTRS: ClassVar[dict[str, str]] = {
        "kernel": "array<i64: kh, kw>, required",
        "stride": "array<i64: sh, sw>, default = kernel",
        "padding": "array<i64: ph, pw>, default [0, 0]; each at most half the kernel",
    }

    @classmethod
    def infer(cls, types, attrs, out):
        cfg = pool2d_config(attrs)
        n, c, h, w = expect_rank(types[0], (4,), "input x [N, C, H, W]")
        dtype = expect_float(types[0], "input x")
        return [tensor((n, c, *spatial_output((h, w), cfg.kernel, cfg.stride, cfg.padding)),
                       dtype)]


def max_pool2d_numpy(x: np.ndarray, cfg: Pool2dConfig) -> np.ndarray:
    """Maximum over in-bounds taps (padding is -inf, so it never wins)."""
    xp = pad_nchw(x, cfg.padding, -np.inf)
    return window_view(xp, cfg.kernel, cfg.stride).max(axis=(4, 5))


def avg_pool2d_numpy(x: np.ndarray, cfg: Pool2dConfig) -> np.ndarray:
    """Sum over in-bounds taps divided by ``kh * kw`` (count_include_pad=True)."""
    windows = window_view(pad_nchw(x, cfg.padding), cfg.kernel, cfg.stride)
    return windows.sum(axis=(4, 5)) / (cfg.kernel[0] * cfg.kernel[1])


MaxPool2dOp = define_op(
    "MaxPool2dOp", Pool2dOp, "rlx.max_pool2d",
    """Max pooling: the maximum over the in-bounds taps of each window (padding never wins).

    Example::

        %p = rlx.max_pool2d %x {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>,
            padding = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
    """,
    POOL_FN=staticmethod(max_pool2d_numpy),
)
AvgPool2dOp = define_op(
    "AvgPool2dOp", Pool2dOp, "rlx.avg_pool2d",
    """Average pooling: window sum over in-bounds taps / ``kh * kw`` (count_include_pad).

    Example::

        %p = rlx.avg_pool2d %x {kernel = array<i64: 2, 2>} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
    """,
    POOL_FN=staticmethod(avg_pool2d_numpy),
)
POOL_OPS = (MaxPool2dOp, AvgPool2dOp)


@INTERPRET.register(*POOL_OPS)
def _interpret_pool(op: Pool2dOp, x: np.ndarray) -> np.ndarray:
    return type(op).POOL_FN(x, pool2d_config(op.py_attrs()))


# ---------------------------------------------------------------- VJP rules (SPEC 5.7)
# Conv and max-pool gradients are the dedicated ops of rlx_mlir/dialects/backward/conv.py;
# avg_pool2d is a depthwise conv2d_backward_input with a uniform kernel.

from typing import TYPE_CHECKING  # noqa: E402

from rlx_mlir.rules import VJP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext


@VJP.register(Conv2dOp)
def _vjp_conv2d(ctx: VjpContext, op: Conv2dOp, g: Tensor) -> list[Tensor | None]:
    """dx = conv2d_backward_input(g, w), dw = conv2d_backward_weight(x, g), db = sum_nhw g."""
    x, w, *bias = ctx.inputs(op)
    attrs = op.py_attrs()
    dx = ctx.b.emit("conv2d_backward_input", g, w, out=[x.type], **attrs)
    dw = ctx.b.emit("conv2d_backward_weight", x, g, out=[w.type], **attrs)
    db = [ctx.b.reduce_sum(g, axes=[0, 2, 3])] if bias else []
    return [dx, dw, *db]


@VJP.register(MaxPool2dOp)
def _vjp_max_pool2d(ctx: VjpContext, op: Pool2dOp, g: Tensor) -> list[Tensor | None]:
    """dx = max_pool2d_backward(x, g): g goes to each window's first argmax."""
    (x,) = ctx.inputs(op)
    return [ctx.b.max_pool2d_backward(x, g, **op.py_attrs())]


def uniform_depthwise_kernel(ctx: VjpContext, channels: int, kernel: Pair, dtype: str
                             ) -> Tensor:
    """``K[C, 1, kh, kw] = 1 / (kh kw)`` in ``dtype`` (not f32 bytes: SPEC 9.9)."""
    return ctx.b.full((channels, 1, *kernel), 1.0 / (kernel[0] * kernel[1]), dtype)


@VJP.register(AvgPool2dOp)
def _vjp_avg_pool2d(ctx: VjpContext, op: Pool2dOp, g: Tensor) -> list[Tensor | None]:
    """dx = conv2d_backward_input(g, K, groups = C): each tap gets g / (kh kw)
    (count_include_pad, so padding taps just drop their share)."""
    (x,) = ctx.inputs(op)
    cfg = pool2d_config(op.py_attrs())
    if tiling_windows(cfg, x.shape):
        return [spread_over_windows(ctx, g, cfg, x.shape)]
    kernel = uniform_depthwise_kernel(ctx, x.shape[1], cfg.kernel, x.dtype)
    return [ctx.b.emit("conv2d_backward_input", g, kernel, out=[x.type], stride=cfg.stride,
                       padding=cfg.padding, groups=x.shape[1])]


def tiling_windows(cfg: Pool2dConfig, x_shape: Sequence[int]) -> bool:
    """Windows that tile ``x`` exactly (stride = kernel, no padding): a global pool, or a
    2x2 pool at stride 2 of an even image."""
    return (cfg.stride == cfg.kernel and cfg.padding == (0, 0)
            and all(size % k == 0 for size, k in zip(x_shape[2:], cfg.kernel, strict=True)))


def spread_over_windows(ctx: VjpContext, g: Tensor, cfg: Pool2dConfig,
                        x_shape: Sequence[int]) -> Tensor:
    """``dx`` of tiling windows: each window's ``g / (kh kw)`` broadcast over it, a view
    ``[N, C, Ho, 1, Wo, 1] -> [N, C, Ho, kh, Wo, kw]`` (the depthwise transposed conv took
    2.6-4x torch's time on a global pool's gradient)."""
    (n, c, ho, wo), (kh, kw) = g.shape, cfg.kernel
    share = ctx.b.reshape(g * (1.0 / (kh * kw)), (n, c, ho, 1, wo, 1))
    return ctx.b.reshape(ctx.b.expand(share, (n, c, ho, kh, wo, kw)), tuple(x_shape))


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# conv2d is bilinear in (x, w) and linear in the bias, avg_pool2d is linear, max_pool2d
# takes the tangent at each window's first argmax (rlx.max_pool2d_jvp, backward/conv.py).

from rlx_mlir.dialects.base import dtype_of  # noqa: E402
from rlx_mlir.rules import JVP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.builder import Builder
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext


def reemit(b: Builder, op: RlxOp, *operands: Tensor, shape: Sequence[int] | None = None,
           **attrs: Any) -> Tensor:
    """``op`` again on ``operands`` (attributes overridden by ``attrs``); its one result
    has ``shape`` (default: the op's own result shape) and the op's dtype."""
    result = op.results[0].type
    out = tensor(shape if shape is not None else shape_of(result), dtype_of(result))
    return b.emit(op.name.removeprefix("rlx."), *operands, out=[out],  # type: ignore[return-value]
                  **{**op.py_attrs(), **attrs})


def bilinear_jvp(ctx: JvpContext, op: RlxOp, ta: Tensor | None,
                 tb: Tensor | None) -> Tensor | None:
    """``op(ta, b) + op(a, tb)`` for an op bilinear in its first two operands."""
    a, b = ctx.inputs(op)[:2]
    return ctx.add(None if ta is None else reemit(ctx.b, op, ta, b),
                   None if tb is None else reemit(ctx.b, op, a, tb))


@JVP.register(Conv2dOp)
def _jvp_conv2d(ctx: JvpContext, op: Conv2dOp, tx: Tensor | None, tw: Tensor | None,
                tb: Tensor | None = None) -> list[Tensor | None]:
    """``conv(tx, w) + conv(x, tw) + tb`` (tb broadcast over N, H, W)."""
    shape = shape_of(op.result.type)
    bias = None if tb is None else ctx.broadcast_to(ctx.b.reshape(tb, (shape[1], 1, 1)), shape)
    return [ctx.add(bilinear_jvp(ctx, op, tx, tw), bias)]


@JVP.register(AvgPool2dOp)
def _jvp_avg_pool2d(ctx: JvpContext, op: Pool2dOp, t: Tensor | None) -> list[Tensor | None]:
    return [None if t is None else reemit(ctx.b, op, t)]


@JVP.register(MaxPool2dOp)
def _jvp_max_pool2d(ctx: JvpContext, op: Pool2dOp, t: Tensor | None) -> list[Tensor | None]:
    """The tangent at each window's first argmax (ties as in max_pool2d_backward)."""
    (x,) = ctx.inputs(op)
    return [None if t is None else ctx.b.max_pool2d_jvp(x, t, **op.py_attrs())]


# ---------------------------------------------------------------- batching rules (SPEC 6.2)
# A shared weight: B is folded into N (SPEC 6.2's reshape trick). A batched weight (ignored
# by RLX, SPEC 9.19): B is folded into the channels and the groups, x [B, N, C, H, W] ->
# [N, B*C, H, W], w [B, O, C/G, kh, kw] -> [B*O, C/G, kh, kw], groups G*B: group b*G + g
# of the grouped conv is group g of batch element b.


def emit_folded(ctx: VmapContext, op: RlxOp, *operands: Tensor) -> Tensor:
    """``op`` on operands whose N holds B*N: the result ``[B*N, ...]`` unfolded to
    ``[B, N, ...]``."""
    n, *rest = shape_of(op.results[0].type)
    return ctx.unfold(reemit(ctx.b, op, *operands, shape=(ctx.size * n, *rest)))


def batch_into_channels(ctx: VmapContext, x: Tensor) -> Tensor:
    """``[B, N, C, H, W] -> [N, B*C, H, W]``."""
    t = ctx.b.transpose(x, perm=(1, 0, 2, 3, 4))
    n, b, c, h, w = t.shape
    return ctx.b.reshape(t, (n, b * c, h, w))


def batch_from_channels(ctx: VmapContext, y: Tensor) -> Tensor:
    """``[N, B*C, H, W] -> [B, N, C, H, W]`` (inverse of :func:`batch_into_channels`)."""
    n, bc, h, w = y.shape
    t = ctx.b.reshape(y, (n, ctx.size, bc // ctx.size, h, w))
    return ctx.b.transpose(t, perm=(1, 0, 2, 3, 4))


def emit_grouped(ctx: VmapContext, op: RlxOp, axis: int, *operands: Tensor) -> Tensor:
    """``op`` with B folded into its groups; the result's ``axis`` holds ``B * size``."""
    shape = list(shape_of(op.results[0].type))
    shape[axis] *= ctx.size
    groups = conv2d_config(op.py_attrs()).groups * ctx.size
    return reemit(ctx.b, op, *operands, shape=shape, groups=groups)


def _conv2d_no_bias(ctx: VmapContext, op: Conv2dOp, x: Tensor, w: Tensor, bx: bool,
                    bw: bool) -> Tensor:
    """``conv2d(x, w)``: ``[B, N, O, Ho, Wo]``, or unbatched when neither is batched."""
    if bw:
        xc = batch_into_channels(ctx, ctx.lift(x, bx))
        return batch_from_channels(ctx, emit_grouped(ctx, op, 1, xc, ctx.fold(w)))
    return emit_folded(ctx, op, ctx.fold(x), w) if bx else reemit(ctx.b, op, x, w)


@VMAP.register(Conv2dOp)
def _vmap_conv2d(ctx: VmapContext, op: Conv2dOp, xs: Sequence[Tensor],
                 batched: Sequence[bool]) -> list[Tensor]:
    """B folded into N (shared w) or into the groups (batched w); a batched bias
    ``[B, O]`` is added as ``[B, 1, O, 1, 1]``, a shared one stays fused when it can."""
    x, w, *bias = xs
    bx, bw, *bb = batched
    if not bw and not any(bb):
        return [emit_folded(ctx, op, ctx.fold(x), w, *bias)]
    y = _conv2d_no_bias(ctx, op, x, w, bx, bw)
    if bias:
        (b,), (b_batched,) = bias, bb
        shape = (ctx.size, 1, b.shape[-1], 1, 1) if b_batched else (b.shape[-1], 1, 1)
        y = y + ctx.b.reshape(b, shape)
    return [y]


@VMAP.register(*POOL_OPS)
def _vmap_pool(ctx: VmapContext, op: Pool2dOp, xs: Sequence[Tensor],
               batched: Sequence[bool]) -> list[Tensor]:
    """B folded into N."""
    return [emit_folded(ctx, op, ctx.fold(xs[0]))]


OPS = [Conv2dOp, *POOL_OPS]


# ---------------------------------------------------------------- LOWER rules
# Each conv/pool is one linalg.generic reading a padded tensor (tensor.pad) at
# ``out * stride + tap * dilation``; groups split the channel dims into [G, C/G] (free
# expand/collapse_shape), so every indexing map is affine and the output map a projection.

from xdsl.dialects import func  # noqa: E402
from xdsl.dialects import tensor as tensor_dialect  # noqa: E402
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IndexType, IntegerAttr, i64  # noqa: E402
from xdsl.ir import SSAValue  # noqa: E402
from xdsl.ir.affine import AffineExpr, AffineMap  # noqa: E402

from rlx_mlir.rules import LOWER  # noqa: E402

PARALLEL, REDUCTION = "parallel", "reduction"


def affine_dims(count: int) -> list[AffineExpr]:
    """``[d0, ..., d{count-1}]``."""
    return [AffineExpr.dimension(i) for i in range(count)]


def affine_map(num_dims: int, exprs: Sequence[AffineExpr]) -> AffineMap:
    return AffineMap(num_dims, 0, tuple(exprs))


def window_read(out: AffineExpr, tap: AffineExpr, stride: int, dilation: int,
                offset: int = 0) -> AffineExpr:
    """The padded-input index ``out * stride + tap * dilation + offset``."""
    return out * stride + tap * dilation + offset


def pad_hw(e: Any, x: SSAValue, low: Pair, high: Pair, value: float) -> SSAValue:
    """``x [..., H, W]`` padded on the last two dims with ``value`` (``tensor.pad``)."""
    if low == high == (0, 0):
        return x
    shape, etype = shape_of(x.type), x.type.element_type  # type: ignore[attr-defined]
    lead = [0] * (len(shape) - 2)
    padded = [*shape[:-2], *(s + lo + hi for s, lo, hi in zip(shape[-2:], low, high, strict=True))]
    pad_value = e.scalar(value, etype)
    region = e.region([IndexType()] * len(shape), lambda s, *_: pad_value,
                      yield_op=tensor_dialect.YieldOp)
    return e.emit(tensor_dialect.PadOp(x, [], [], region, [*lead, *low], [*lead, *high],
                                       TensorType(etype, padded)))


def _reassociation(groups: Sequence[Sequence[int]]) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([IntegerAttr(i, i64) for i in g]) for g in groups])


def _dim_groups(rank: int, axis: int) -> list[list[int]]:
    """Reassociation merging dims ``axis`` and ``axis + 1`` of a rank ``rank + 1`` shape."""
    return [[i] for i in range(axis)] + [[axis, axis + 1]] + [[i + 1] for i in range(axis + 1, rank)]


def split_dim(e: Any, x: SSAValue, axis: int, parts: int) -> SSAValue:
    """``[..., C, ...] -> [..., parts, C / parts, ...]`` (``tensor.expand_shape``)."""
    shape, etype = list(shape_of(x.type)), x.type.element_type  # type: ignore[attr-defined]
    out = [*shape[:axis], parts, shape[axis] // parts, *shape[axis + 1:]]
    return e.emit(tensor_dialect.ExpandShapeOp.create(
        operands=[x], result_types=[TensorType(etype, out)],
        properties={"reassociation": _reassociation(_dim_groups(len(shape), axis)),
                    "static_output_shape": DenseArrayBase.from_list(i64, out)}))


def merge_dims(e: Any, x: SSAValue, axis: int) -> SSAValue:
    """``[..., G, C, ...] -> [..., G * C, ...]`` (``tensor.collapse_shape``)."""
    shape, etype = list(shape_of(x.type)), x.type.element_type  # type: ignore[attr-defined]
    out = [*shape[:axis], shape[axis] * shape[axis + 1], *shape[axis + 2:]]
    return e.emit(tensor_dialect.CollapseShapeOp.create(
        operands=[x], result_types=[TensorType(etype, out)],
        properties={"reassociation": _reassociation(_dim_groups(len(out), axis))}))


def multiply_add(s: Any, a: Any, b: Any, acc: Any) -> Any:
    return s.add(acc, s.mul(a, b))


TAP_COPY_MIN_WIDTH, TAP_COPY_MAX_WIDTH = 12, 32
"""im2col copies a tap at a time (:func:`_copy_tap`, vectorized along ``x``) at stride 1
for output rows of this many pixels. The one-generic form left the copy to LLVM, which
fully unrolled a short ``x`` loop and gathered along ``y``. Outside the range the
one-generic form stays: on wide rows LLVM vectorizes ``x`` itself and the per-tap copies
were 2-6% slower (``16x64x56x56``), on rows of 7 they were 15-30% slower (``32x64x7x7``),
at stride 2 their strided vector reads 10x slower. 3x3, 2 threads, ms, forward / d/dx /
d/dw (each gradient with the forward), before -> after: ``32x32x16x16`` 0.87 -> 0.41
(torch 0.36) / 1.40 -> 0.84 / 1.78 -> 0.86; ``8x32x32x32`` 0.70 -> 0.60 / 1.32 -> 1.20 /
1.21 -> 1.02; ``64x64x28x28`` 11.6 -> 10.6 / 24.0 -> 22.0 / 23.3 -> 21.5; ``32x128x14x14``
5.4 -> 5.1 / 11.4 -> 10.8 / 13.0 -> 12.5."""


def window_patches(e: Any, xp: SSAValue, out_hw: Pair, kernel: Pair, stride: Pair,
                   dilation: Pair, offset: Pair = (0, 0)) -> SSAValue:
    """im2col: ``patches[g,c,i,j,n,y,x] = xp[n,g,c, y*sh + i*dh + oh, x*sw + j*dw + ow]``.

    The layout makes the taps ``(c, i, j)`` the rows and the output pixels ``(n, y, x)``
    the columns of a matmul operand, so the correlation is a plain contraction (a packed
    ``linalg.matmul`` after the contractions stage). Rows of 12-32 pixels at stride 1:
    one copy per tap (see :data:`TAP_COPY_MAX_WIDTH`), unless there is one tap (a 1x1
    kernel: its lone copy fused into the contraction, which lost its matmul form and ran
    30x slower); else, and for the flipped taps
    (negative ``dilation``) of a strided input gradient's phases (2x slower per tap,
    ``32x64x56x56`` at stride 2: 16 -> 30 ms), one generic reading the window.
    """
    if (stride[1] != 1 or min(dilation) < 1 or kernel == (1, 1)
            or not TAP_COPY_MIN_WIDTH <= out_hw[1] <= TAP_COPY_MAX_WIDTH):
        return _windowed_copy(e, xp, out_hw, kernel, stride, dilation, offset)
    nb, g, c = shape_of(xp.type)[:3]
    dtype = xp.type.element_type  # type: ignore[attr-defined]
    patches = e.empty((g, c, *kernel, nb, *out_hw), dtype)
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            start = (i * dilation[0] + offset[0], j * dilation[1] + offset[1])
            patches = _copy_tap(e, xp, patches, (i, j), start, stride)
    return patches


def _windowed_copy(e: Any, xp: SSAValue, out_hw: Pair, kernel: Pair, stride: Pair,
                   dilation: Pair, offset: Pair = (0, 0)) -> SSAValue:
    """:func:`window_patches` as one generic whose read map holds the window; it walks
    ``x`` innermost. A unit reduction loop (over an unread ``[1]`` operand) keeps
    elementwise fusion from folding this gather back into its single consumer, whose
    window map would then hide the matmul.
    """
    nb, g, c = shape_of(xp.type)[:3]
    dtype = xp.type.element_type  # type: ignore[attr-defined]
    gg, cc, i, j, n, y, x, unit = affine_dims(8)
    read = [window_read(y, i, stride[0], dilation[0], offset[0]),
            window_read(x, j, stride[1], dilation[1], offset[1])]
    maps = [affine_map(8, [n, gg, cc, *read]), affine_map(8, [unit]),
            affine_map(8, [gg, cc, i, j, n, y, x])]
    init = e.empty((g, c, *kernel, nb, *out_hw), dtype)
    return e.generic([xp, e.empty((1,), dtype)], [init], maps, [PARALLEL] * 7 + [REDUCTION],
                     lambda s, v, _, __: v)


def _copy_tap(e: Any, xp: SSAValue, patches: SSAValue, tap: Pair, start: Pair,
              stride: Pair) -> SSAValue:
    """``patches`` with ``patches[:, :, i, j] = xp[:, :, :, start::stride][..., :Ho, :Wo]``
    (moved from ``[N, G, C, Ho, Wo]`` to ``[G, C, N, Ho, Wo]``)."""
    g, c, _, _, nb, ho, wo = shape_of(patches.type)
    window = e.extract_slice(xp, [0, 0, 0, *start], [nb, g, c, ho, wo], [1, 1, 1, *stride])
    slot_at = [0, 0, *tap, 0, 0, 0]
    slot = e.extract_slice(patches, slot_at, [g, c, 1, 1, nb, ho, wo])
    gg, cc, i, j, n, y, x = affine_dims(7)
    maps = [affine_map(7, [n, gg, cc, y, x]), affine_map(7, [gg, cc, i, j, n, y, x])]
    copied = e.generic([window], [slot], maps, [PARALLEL] * 7, lambda s, v, _: v)
    return e.insert_slice(copied, patches, slot_at)


def grouped_correlation(e: Any, xp: SSAValue, w: SSAValue, init: SSAValue,
                        stride: Pair, dilation: Pair, offset: Pair = (0, 0),
                        weight_out_first: bool = True) -> SSAValue:
    """``out[n,g,o,y,x] += sum_{c,i,j} w[g,o,c,i,j] * patches[g,c,i,j,n,y,x]`` over the
    :func:`window_patches` of ``xp`` (``weight_out_first=False`` reads ``w[g,c,o,i,j]``,
    the transposed-weight form of conv2d_backward_input).

    Loops ``(n, g, o, y, x | c, i, j)``: per group, an ``[O, C*KH*KW] @ [C*KH*KW, N*Ho*Wo]``
    matmul.
    """
    out_hw = tuple(shape_of(init.type)[3:])
    kernel = tuple(shape_of(w.type)[3:])
    patches = window_patches(e, xp, out_hw, kernel, stride, dilation, offset)  # type: ignore[arg-type]
    n, g, o, y, x, c, i, j = affine_dims(8)
    w_map = [g, o, c, i, j] if weight_out_first else [g, c, o, i, j]
    maps = [affine_map(8, w_map), affine_map(8, [g, c, i, j, n, y, x]),
            affine_map(8, [n, g, o, y, x])]
    return e.generic([w, patches], [init], maps, [PARALLEL] * 5 + [REDUCTION] * 3, multiply_add)


def grouped_bias_init(e: Any, bias: SSAValue, out_shape: Sequence[int]) -> SSAValue:
    """``bias [G * O]`` broadcast to ``[N, G, O, Ho, Wo]`` (the conv's accumulator)."""
    grouped = split_dim(e, bias, 0, out_shape[1])
    dims = affine_dims(5)
    maps = [affine_map(5, dims[1:3]), affine_map(5, dims)]
    init = e.empty(out_shape, bias.type.element_type)  # type: ignore[attr-defined]
    return e.generic([grouped], [init], maps, [PARALLEL] * 5, lambda s, b, _: b)


@LOWER.register(Conv2dOp)
def _lower_conv2d(op: Conv2dOp, e: Any, x: SSAValue, w: SSAValue,
                  bias: SSAValue | None = None) -> SSAValue:
    cfg = conv2d_config(op.py_attrs())
    n, c_out, ho, wo = shape_of(op.result.type)
    g = cfg.groups
    grouped_shape = (n, g, c_out // g, ho, wo)
    dtype = x.type.element_type  # type: ignore[attr-defined]
    if per_image_form(op, grouped_shape, shape_of(w.type)):
        y = per_image_conv(e, x, split_dim(e, w, 0, g), bias, grouped_shape, cfg)
        return merge_dims(e, y, 1)
    init = (e.fill(0.0, grouped_shape, dtype) if bias is None
            else grouped_bias_init(e, bias, grouped_shape))
    xp = split_dim(e, pad_hw(e, x, cfg.padding, cfg.padding, 0.0), 1, g)
    correlate = direct_correlation if direct_form(shape_of(w.type)[1], g) else grouped_correlation
    y = correlate(e, xp, split_dim(e, w, 0, g), init, cfg.stride, cfg.dilation)
    return merge_dims(e, y, 1)


PER_IMAGE_MIN_FLOPS = 1 << 27
"""A conv from this many flops, in a function body, runs one image per iteration of a
parallel loop: that image's im2col patches stay in cache between the copy and the matmul
per group reading them, and the ``[O, Ho*Wo]`` product is the image's NCHW output (no
transpose). ``bench/conv_ops.py`` (32x64x56x56, 3x3, 2 threads): dense forward 37 -> 27
ms (torch 19), 2 groups 32 -> 15 ms (torch 10), 8 groups 20 -> 5.9 ms (torch 6.6). Its
stride-1 input gradient and its weight gradient take the same form
(``rlx_mlir.dialects.backward.conv``): dense d/dx 65 -> 41 ms (torch 38), d/dw 79 -> 39
ms (torch 39), 2 groups d/dx 67 -> 31, d/dw 45 -> 26 (torch 26, 27), each with the
forward."""


STRIDED_PER_IMAGE_MIN_FLOPS = 1 << 18
"""The per-image threshold of strided convs: their direct form reads strided rows, which
LLVM does not vectorize, and im2col over the whole batch sends the patches to memory.
3x3 at stride 2, 2 threads, with the forward in d/dx: depthwise ``32x64x56x56`` forward
2.9 -> 2.3 ms (torch 1.9-2.1), d/dx 10.2 -> 7.5 ms (torch 6.2-6.5); depthwise
``8x128x28x28`` 0.61 -> 0.24 ms (torch 0.13), d/dx 1.0 -> 0.58 (torch 0.4); dense
``8x32x32x32`` 0.59 -> 0.26 ms (torch 0.15), d/dx 1.13 -> 0.71 (torch 0.47); 32 groups of
``16x32x64x64`` 1.08 -> 0.56 ms (torch 0.35)."""


def per_image_form(op: RlxOp, grouped_shape: Sequence[int], w_shape: Sequence[int]) -> bool:
    """A conv (``grouped_shape`` ``(N, G, O per group, Ho, Wo)``; ``w_shape[1:]`` the taps
    each output reduces over) in a function body of :data:`PER_IMAGE_MIN_FLOPS` or more
    (:data:`STRIDED_PER_IMAGE_MIN_FLOPS` when strided). Per-image products too small for
    the packed matmul schedule take the unpacked one on in-cache patches: 32x64x56x56 3x3
    at stride 2, forward 14.8 -> 6.5 ms (torch 6.0-7.5), weight gradient 24 -> 13 ms
    (torch 14); 64x64x28x28 input gradient 33 -> 24 ms, weight gradient 37 -> 23 ms
    (torch 18-19), with the forward. Not a depthwise conv at stride 1 (``32x32x112x112``:
    forward 8.3 ms direct against 14.6 per image, weight gradient 21 against 34)."""
    n, g, o, ho, wo = grouped_shape
    taps = int(np.prod(w_shape[1:]))
    strided = conv2d_config(op.py_attrs()).stride != (1, 1)
    depthwise = g > 1 and w_shape[1] == 1  # one channel per group: the direct form wins
    return (n > 1 and (strided or not depthwise) and 2 * n * g * o * ho * wo * taps >= (
                STRIDED_PER_IMAGE_MIN_FLOPS if strided else PER_IMAGE_MIN_FLOPS)
            and isinstance(op.parent_op(), func.FuncOp))


def per_image(e: Any, out_shape: Sequence[int], dtype: Any,
              image: Callable[[Any, SSAValue], SSAValue]) -> SSAValue:
    """``out[n] = image(emitter, n)`` (each a ``[1, *out_shape[1:]]`` tile), the images
    split over the threads (one chunk of images per thread, an ``scf.for`` over it)."""
    from rlx_mlir.lowering import forall as F
    from rlx_mlir.lowering.schedules import num_threads

    def body(t: Any, ivs: Sequence[SSAValue]) -> list[tuple[SSAValue, list]]:
        return [(image(t, ivs[0]), [ivs[0], *[0] * (len(out_shape) - 1)])]

    return F.chunked_forall(e, num_threads(), [out_shape[0], 1],
                            [e.empty(list(out_shape), dtype)], body)[0]


def image_of(e: Any, x: SSAValue, n: SSAValue) -> SSAValue:
    """``x[n:n+1]`` of an NCHW-like tensor."""
    from rlx_mlir.lowering import forall as F

    shape = shape_of(x.type)
    return F.slice_of(e, x, [n, *[0] * (len(shape) - 1)], [1, *shape[1:]])


def per_image_conv(e: Any, x: SSAValue, w: SSAValue, bias: SSAValue | None,
                   out_shape: Sequence[int], cfg: Conv2dConfig) -> SSAValue:
    """Each image ``x[n]`` padded and correlated alone (:func:`grouped_correlation`, one
    group): :func:`per_image`."""
    dtype = x.type.element_type  # type: ignore[attr-defined]
    image = [1, *out_shape[1:]]

    def one(t: Any, n: SSAValue) -> SSAValue:
        xp = split_dim(t, pad_hw(t, image_of(t, x, n), cfg.padding, cfg.padding, 0.0), 1,
                       cfg.groups)
        init = (t.fill(0.0, image, dtype) if bias is None
                else grouped_bias_init(t, bias, image))
        return grouped_correlation(t, xp, w, init, cfg.stride, cfg.dilation)

    return per_image(e, out_shape, dtype, one)


DIRECT_MAX_CHANNELS = 16
"""Grouped convs (and their input gradients) reducing over at most this many channels per
group take :func:`direct_correlation` instead of im2col. ``python bench/conv_ops.py
--groups 16 8 4 2`` (``32x64x56x56``, 3x3, forward, 2 threads): 4 channels 13 ms against
im2col's 29-44, 8 channels 21 against 39-45, 16 channels 36 against 66, 32 channels 67
against 115 (left on im2col: one generic per channel, compile time)."""
FUSED_MAX_CHANNELS = 2
"""Up to this many reduced channels the direct form is one generic with a channel loop
(2 channels: 9.0 ms); above, one generic per channel: with 4 channels in the loop LLVM no
longer unrolled the taps and did not vectorize (72 ms)."""


def direct_form(reduced_channels: int, groups: int) -> bool:
    """Whether a grouped conv reducing over ``reduced_channels`` per group takes a direct
    form (no im2col)."""
    return groups > 1 and reduced_channels <= DIRECT_MAX_CHANNELS


def direct_correlation(e: Any, xp: SSAValue, w: SSAValue, init: SSAValue, stride: Pair,
                       dilation: Pair, offset: Pair = (0, 0),
                       weight_out_first: bool = True) -> SSAValue:
    """``out[n,g,o,y,x] += sum_{c,i,j} w[g,o,c,i,j] * xp[n,g,c, y*sh + i*dh + oh,
    x*sw + j*dw + ow]`` over the output, loops ``(n, g, o, y, x | c, i, j)``, no im2col:
    for few channels per group a per-group matmul would have K = C*KH*KW and M = O/G,
    4-6x slower than PyTorch, and LLVM unrolls the few taps and vectorizes along ``x``.
    ``weight_out_first=False`` reads ``w[g,c,o,i,j]`` (conv2d_backward_input)."""
    channels = shape_of(xp.type)[2]
    if channels <= FUSED_MAX_CHANNELS:
        return _direct_generic(e, xp, w, init, stride, dilation, offset, weight_out_first, None)
    for c in range(channels):
        init = _direct_generic(e, xp, w, init, stride, dilation, offset, weight_out_first, c)
    return init


def _direct_generic(e: Any, xp: SSAValue, w: SSAValue, init: SSAValue, stride: Pair,
                    dilation: Pair, offset: Pair, weight_out_first: bool,
                    channel: int | None) -> SSAValue:
    """One direct generic: over every reduced channel (``channel=None``) or just one."""
    rank = 8 if channel is None else 7  # a channel loop, or the channel a constant
    n, g, o, y, x, *taps = affine_dims(rank)
    c, i, j = taps if channel is None else (AffineExpr.constant(channel), *taps)
    read = [window_read(y, i, stride[0], dilation[0], offset[0]),
            window_read(x, j, stride[1], dilation[1], offset[1])]
    w_map = [g, o, c, i, j] if weight_out_first else [g, c, o, i, j]
    maps = [affine_map(rank, w_map), affine_map(rank, [n, g, c, *read]),
            affine_map(rank, [n, g, o, y, x])]
    return e.generic([w, xp], [init], maps, [PARALLEL] * 5 + [REDUCTION] * (rank - 5),
                     multiply_add)


def pool_window(e: Any, x: SSAValue, cfg: Pool2dConfig, out_shape: Sequence[int],
                pad_value: float, init: float, body: Callable[..., Any]) -> SSAValue:
    """``out[n,c,y,x] = fold(body, init, xp[n,c, y*sh+i, x*sw+j] for taps (i, j))``.

    The unread ``tensor.empty`` window operand only gives the loops over (i, j) their bounds.
    """
    dtype = x.type.element_type  # type: ignore[attr-defined]
    xp = pad_hw(e, x, cfg.padding, cfg.padding, pad_value)
    n, c, y, xo, i, j = affine_dims(6)
    maps = [affine_map(6, [n, c, window_read(y, i, cfg.stride[0], 1),
                           window_read(xo, j, cfg.stride[1], 1)]),
            affine_map(6, [i, j]), affine_map(6, [n, c, y, xo])]
    window = e.empty(cfg.kernel, dtype)
    acc = e.fill(init, out_shape, dtype)
    return e.generic([xp, window], [acc], maps, [PARALLEL] * 4 + [REDUCTION] * 2,
                     lambda s, v, _, a: body(s, v, a))


@LOWER.register(MaxPool2dOp)
def _lower_max_pool2d(op: Pool2dOp, e: Any, x: SSAValue) -> SSAValue:
    """-inf padding never wins; ``maximumf`` propagates NaN like ``np.max``."""
    cfg = pool2d_config(op.py_attrs())
    return pool_window(e, x, cfg, shape_of(op.result.type), -np.inf, -np.inf,
                       lambda s, v, acc: s.max(acc, v))


@LOWER.register(AvgPool2dOp)
def _lower_avg_pool2d(op: Pool2dOp, e: Any, x: SSAValue) -> SSAValue:
    """Window sum over zero padding, then ``/ (kh * kw)`` (count_include_pad)."""
    cfg = pool2d_config(op.py_attrs())
    total = pool_window(e, x, cfg, shape_of(op.result.type), 0.0, 0.0,
                        lambda s, v, acc: s.add(acc, v))
    area = float(cfg.kernel[0] * cfg.kernel[1])
    return e.elementwise([total], x.type.element_type, lambda s, v: s.div(v, area))  # type: ignore[attr-defined]
