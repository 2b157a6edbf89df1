"""Conv and pool backward ops (SPEC 3 rows 17-19, 3.6) and their VJPs (SPEC 5.7).

::

    %dx = rlx.conv2d_backward_input %dy, %w {padding = array<i64: 1, 1>}
        : (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
    %dw = rlx.conv2d_backward_weight %x, %dy {padding = array<i64: 1, 1>}
        : (tensor<1x3x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<4x3x3x3xf32>
    %dx = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 2, 2>}
        : (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>

The two conv ops are linear in both operands, so they differentiate into each other and
``rlx.conv2d`` (double backward). ``rlx.max_pool2d_backward`` has no VJP with respect to
``dy`` (second derivatives of max_pool2d are rejected with a located error).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np
from xdsl.dialects.builtin import TensorType
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from rlx_mlir.dialects.base import (
    RlxOp,
    ShapeError,
    expect_float,
    expect_rank,
    expect_same_dtype,
    fmt_shape,
    shape_of,
)
from rlx_mlir.dialects.conv import (
    Conv2dConfig,
    Conv2dOp,
    Pool2dConfig,
    Pool2dOp,
    col2im,
    conv2d_config,
    conv2d_shape,
    pad_nchw,
    pool2d_config,
    spatial_output,
    window_view,
)
from rlx_mlir.rules import INTERPRET, VJP

if TYPE_CHECKING:
    from rlx_mlir.builder import Tensor
    from rlx_mlir.transforms.autodiff import VjpContext

# ---------------------------------------------------------------- shared checks


def declared_result(op_name: str, out: Sequence[TensorType] | None) -> TensorType:
    """The caller-given result type of a ``RESULT_FROM_TYPE`` backward op."""
    if not out:
        raise ShapeError(f"'{op_name}' needs its result type (the caller-given shape)")
    return out[0]


def expect_conv_output(x: Sequence[int], w: Sequence[int], cfg: Conv2dConfig,
                       dy: Sequence[int]) -> None:
    """ShapeError unless ``conv2d(x, w, cfg)`` has ``dy``'s shape.

    ``expect_conv_output((1, 3, 8, 8), (4, 3, 3, 3), Conv2dConfig(), (1, 4, 6, 6))`` passes.
    """
    expected = conv2d_shape(x, w, cfg)
    if tuple(dy) != expected:
        raise ShapeError(
            f"conv2d of x {fmt_shape(x)} with w {fmt_shape(w)} gives {fmt_shape(expected)}, "
            f"but dy has shape {fmt_shape(dy)}"
        )


class ConvBackwardOp(RlxOp):
    """A conv2d backward op: two rank-4 operands, a caller-given rank-4 result."""

    result = result_def(TensorType)
    RESULT_FROM_TYPE: ClassVar[bool] = True
    ATTRS: ClassVar[dict[str, str]] = dict(Conv2dOp.ATTRS)

    @classmethod
    def checked_types(cls, types, out) -> tuple[tuple[int, ...], ...]:
        """The shapes of ``(operand 0, operand 1, result)`` once ranks and dtypes agree."""
        result = declared_result(cls.name, out)
        expect_float(types[0], f"'{cls.name}' operand 0")
        expect_same_dtype([*types, result], f"'{cls.name}' operands and result")
        return tuple(
            expect_rank(t, (4,), what)
            for t, what in zip((*types, result), cls.ROLES, strict=True)
        )

    ROLES: ClassVar[tuple[str, str, str]]


# ---------------------------------------------------------------- conv2d_backward_input


@irdl_op_definition
class Conv2dBackwardInputOp(ConvBackwardOp):
    """``dx = conv_transpose(dy, w)``: the input gradient of ``rlx.conv2d`` (SPEC 3.6).

    The result type is the forward input's shape (strides and padding make it ambiguous);
    the verifier checks that conv2d of that shape with ``w`` gives ``dy``'s shape.

    Example::

        %dx = rlx.conv2d_backward_input %dy, %w {stride = array<i64: 2, 2>}
            : (tensor<1x4x3x3xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
    """

    name = "rlx.conv2d_backward_input"
    dy = operand_def(TensorType)
    w = operand_def(TensorType)
    ROLES: ClassVar[tuple[str, str, str]] = ("cotangent dy [N, C_out, H_out, W_out]", "weight w [C_out, C_in/groups, kH, kW]",
             "result dx [N, C_in, H, W]")

    @classmethod
    def infer(cls, types, attrs, out):
        cfg = conv2d_config(attrs)
        dy, w, x = cls.checked_types(types, out)
        expect_conv_output(x, w, cfg, dy)
        return [out[0]]


def conv2d_backward_input_numpy(dy: np.ndarray, w: np.ndarray, x_hw: tuple[int, int],
                                cfg: Conv2dConfig) -> np.ndarray:
    """Per-group ``w^T dy`` columns, scattered back with :func:`col2im`."""
    g = cfg.groups
    n, c_out, ho, wo = dy.shape
    _, c_per_group, kh, kw = w.shape
    grouped_dy = dy.reshape(n, g, c_out // g, ho, wo)
    grouped_w = w.reshape(g, c_out // g, c_per_group, kh, kw)
    cols = np.einsum("ngohw,gocij->ngchwij", grouped_dy, grouped_w, optimize=True)
    cols = cols.reshape(n, g * c_per_group, ho, wo, kh, kw)
    return col2im(cols, x_hw, cfg.stride, cfg.padding, cfg.dilation)


@INTERPRET.register(Conv2dBackwardInputOp)
def _interpret_conv2d_backward_input(op: Conv2dBackwardInputOp, dy: np.ndarray,
                                     w: np.ndarray) -> np.ndarray:
    x_hw = shape_of(op.result.type)[2:]
    return conv2d_backward_input_numpy(dy, w, x_hw, conv2d_config(op.py_attrs()))


# ---------------------------------------------------------------- conv2d_backward_weight


@irdl_op_definition
class Conv2dBackwardWeightOp(ConvBackwardOp):
    """``dw = sum_n dy * x`` (correlation): the weight gradient of ``rlx.conv2d`` (SPEC 3.6).

    The result type is the weight's shape ``[C_out, C_in/groups, kH, kW]``; the verifier
    checks that conv2d of ``x`` with that weight gives ``dy``'s shape.

    Example::

        %dw = rlx.conv2d_backward_weight %x, %dy {groups = 2 : i64}
            : (tensor<2x4x6x6xf32>, tensor<2x6x4x4xf32>) -> tensor<6x2x3x3xf32>
    """

    name = "rlx.conv2d_backward_weight"
    x = operand_def(TensorType)
    dy = operand_def(TensorType)
    ROLES: ClassVar[tuple[str, str, str]] = ("input x [N, C_in, H, W]", "cotangent dy [N, C_out, H_out, W_out]",
             "result dw [C_out, C_in/groups, kH, kW]")

    @classmethod
    def infer(cls, types, attrs, out):
        cfg = conv2d_config(attrs)
        x, dy, w = cls.checked_types(types, out)
        expect_conv_output(x, w, cfg, dy)
        return [out[0]]


def conv2d_backward_weight_numpy(x: np.ndarray, dy: np.ndarray, kernel: tuple[int, int],
                                 cfg: Conv2dConfig) -> np.ndarray:
    """Per-group ``dy . im2col(x)^T``, summed over the batch."""
    g = cfg.groups
    cols = window_view(pad_nchw(x, cfg.padding), kernel, cfg.stride, cfg.dilation)
    n, c_in, ho, wo, kh, kw = cols.shape
    grouped_cols = cols.reshape(n, g, c_in // g, ho, wo, kh, kw)
    grouped_dy = dy.reshape(n, g, dy.shape[1] // g, ho, wo)
    dw = np.einsum("ngchwij,ngohw->gocij", grouped_cols, grouped_dy, optimize=True)
    return dw.reshape(dy.shape[1], c_in // g, kh, kw)


@INTERPRET.register(Conv2dBackwardWeightOp)
def _interpret_conv2d_backward_weight(op: Conv2dBackwardWeightOp, x: np.ndarray,
                                      dy: np.ndarray) -> np.ndarray:
    kernel = shape_of(op.result.type)[2:]
    return conv2d_backward_weight_numpy(x, dy, kernel, conv2d_config(op.py_attrs()))


# ---------------------------------------------------------------- max_pool2d_backward


@irdl_op_definition
class MaxPool2dBackwardOp(RlxOp):
    """Route each ``dy`` entry to its window's argmax in ``x`` (SPEC 3 row 17).

    The argmax is taken over in-bounds taps; on ties the first maximum in row-major
    window order wins; overlapping windows accumulate. The result has x's shape.

    Example::

        %dx = rlx.max_pool2d_backward %x, %dy {kernel = array<i64: 3, 3>,
            stride = array<i64: 2, 2>, padding = array<i64: 1, 1>}
            : (tensor<1x2x5x5xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x5x5xf32>
    """

    name = "rlx.max_pool2d_backward"
    x = operand_def(TensorType)
    dy = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = dict(Pool2dOp.ATTRS)

    @classmethod
    def infer(cls, types, attrs, out):
        cfg = pool2d_config(attrs)
        n, c, h, w = expect_rank(types[0], (4,), "input x [N, C, H, W]")
        expect_float(types[0], "input x")
        expect_same_dtype(types, f"'{cls.name}' operands")
        expected = (n, c, *spatial_output((h, w), cfg.kernel, cfg.stride, cfg.padding))
        if shape_of(types[1]) != expected:
            raise ShapeError(
                f"max_pool2d of x {fmt_shape((n, c, h, w))} gives {fmt_shape(expected)}, "
                f"but dy has shape {fmt_shape(shape_of(types[1]))}"
            )
        return [types[0]]


def first_argmax_one_hot(windows: np.ndarray, in_bounds: np.ndarray) -> np.ndarray:
    """``[..., kH, kW]`` windows -> a one-hot mask of the first in-bounds maximum.

    NaN counts as the maximum (like ``np.max``); padding taps never win.
    """
    masked = np.where(in_bounds, windows, -np.inf)
    peak = masked.max(axis=(-2, -1), keepdims=True)
    is_peak = in_bounds & ((masked == peak) | (np.isnan(masked) & np.isnan(peak)))
    flat = is_peak.reshape(*is_peak.shape[:-2], -1)
    first = flat.argmax(axis=-1)[..., None]
    one_hot = np.zeros(flat.shape, bool)
    np.put_along_axis(one_hot, first, True, axis=-1)
    return one_hot.reshape(is_peak.shape)


def max_pool2d_backward_numpy(x: np.ndarray, dy: np.ndarray, cfg: Pool2dConfig) -> np.ndarray:
    """Scatter ``dy`` onto each window's first argmax (col2im of a one-hot mask)."""
    windows = window_view(pad_nchw(x, cfg.padding), cfg.kernel, cfg.stride)
    in_bounds = window_view(pad_nchw(np.ones((1, 1, *x.shape[2:]), bool), cfg.padding, False),
                            cfg.kernel, cfg.stride)
    cols = np.where(first_argmax_one_hot(windows, in_bounds), dy[..., None, None], 0)
    return col2im(cols.astype(dy.dtype), x.shape[2:], cfg.stride, cfg.padding)


@INTERPRET.register(MaxPool2dBackwardOp)
def _interpret_max_pool2d_backward(op: MaxPool2dBackwardOp, x: np.ndarray,
                                   dy: np.ndarray) -> np.ndarray:
    return max_pool2d_backward_numpy(x, dy, pool2d_config(op.py_attrs()))


# ---------------------------------------------------------------- VJP rules (SPEC 5.7)


@VJP.register(Conv2dBackwardInputOp)
def _vjp_conv2d_backward_input(ctx: VjpContext, op: Conv2dBackwardInputOp,
                               g: Tensor) -> list[Tensor | None]:
    """Linear in both: ``d dy = conv2d(g, w)``, ``d w = conv2d_backward_weight(g, dy)``."""
    dy, w = ctx.inputs(op)
    attrs = op.py_attrs()
    return [
        ctx.b.conv2d(g, w, **attrs),
        ctx.b.emit("conv2d_backward_weight", g, dy, out=[w.type], **attrs),
    ]


@VJP.register(Conv2dBackwardWeightOp)
def _vjp_conv2d_backward_weight(ctx: VjpContext, op: Conv2dBackwardWeightOp,
                                g: Tensor) -> list[Tensor | None]:
    """Linear in both: ``d x = conv2d_backward_input(dy, g)``, ``d dy = conv2d(x, g)``."""
    x, dy = ctx.inputs(op)
    attrs = op.py_attrs()
    return [
        ctx.b.emit("conv2d_backward_input", dy, g, out=[x.type], **attrs),
        ctx.b.conv2d(x, g, **attrs),
    ]


@VJP.register(MaxPool2dBackwardOp)
def _vjp_max_pool2d_backward(ctx: VjpContext, op: MaxPool2dBackwardOp,
                             g: Tensor) -> list[Tensor | None]:
    """Linear in dy: its transpose gathers ``g`` at each window's first argmax
    (``max_pool2d_jvp``); x gets none (zero almost everywhere)."""
    x, _ = ctx.inputs(op)
    return [None, ctx.b.max_pool2d_jvp(x, g, **op.py_attrs())]


# ---------------------------------------------------------------- max_pool2d_jvp
# The tangent of max_pool2d: a gather at each window's first argmax, the transpose of
# max_pool2d_backward's scatter (<max_pool2d_jvp(x, t), u> == <t, max_pool2d_backward(x, u)>).

from rlx_mlir.dialects.base import tensor  # noqa: E402


@irdl_op_definition
class MaxPool2dJvpOp(RlxOp):
    """``tx`` read at each window's first argmax of ``x``: the tangent of ``rlx.max_pool2d``.

    Windows and tie-breaking are those of ``rlx.max_pool2d_backward`` (in-bounds taps, the
    first maximum in row-major window order, NaN counts as the maximum).

    Example::

        %t = rlx.max_pool2d_jvp %x, %tx {kernel = array<i64: 2, 2>}
            : (tensor<1x3x8x8xf32>, tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
    """

    name = "rlx.max_pool2d_jvp"
    x = operand_def(TensorType)
    tx = operand_def(TensorType)
    result = result_def(TensorType)
    ATTRS: ClassVar[dict[str, str]] = dict(Pool2dOp.ATTRS)

    @classmethod
    def infer(cls, types, attrs, out):
        cfg = pool2d_config(attrs)
        n, c, h, w = expect_rank(types[0], (4,), "input x [N, C, H, W]")
        dtype = expect_float(types[0], "input x")
        expect_same_dtype(types, f"'{cls.name}' operands")
        if shape_of(types[1]) != (n, c, h, w):
            raise ShapeError(f"tangent tx must have x's shape {fmt_shape((n, c, h, w))}, "
                             f"got {fmt_shape(shape_of(types[1]))}")
        return [tensor((n, c, *spatial_output((h, w), cfg.kernel, cfg.stride, cfg.padding)),
                       dtype)]


def max_pool2d_jvp_numpy(x: np.ndarray, tx: np.ndarray, cfg: Pool2dConfig) -> np.ndarray:
    """Sum of ``tx``'s windows masked by the one-hot first argmax of ``x``'s windows."""
    windows = window_view(pad_nchw(x, cfg.padding), cfg.kernel, cfg.stride)
    in_bounds = window_view(pad_nchw(np.ones((1, 1, *x.shape[2:]), bool), cfg.padding, False),
                            cfg.kernel, cfg.stride)
    tangents = window_view(pad_nchw(tx, cfg.padding), cfg.kernel, cfg.stride)
    return np.where(first_argmax_one_hot(windows, in_bounds), tangents, 0).sum(axis=(4, 5))


@INTERPRET.register(MaxPool2dJvpOp)
def _interpret_max_pool2d_jvp(op: MaxPool2dJvpOp, x: np.ndarray, tx: np.ndarray) -> np.ndarray:
    return max_pool2d_jvp_numpy(x, tx, pool2d_config(op.py_attrs()))


@VJP.register(MaxPool2dJvpOp)
def _vjp_max_pool2d_jvp(ctx: VjpContext, op: MaxPool2dJvpOp, g: Tensor) -> list[Tensor | None]:
    """Linear in tx (its transpose is max_pool2d_backward); zero almost everywhere in x."""
    x, _ = ctx.inputs(op)
    return [None, ctx.b.max_pool2d_backward(x, g, **op.py_attrs())]


# ---------------------------------------------------------------- JVP rules (SPEC 4.6)
# The conv backward ops are bilinear; max_pool2d_backward and max_pool2d_jvp are linear in
# their second operand and piecewise constant in x (the argmax), so x has no tangent.

from rlx_mlir.dialects.conv import (  # noqa: E402
    batch_from_channels,
    batch_into_channels,
    bilinear_jvp,
    emit_folded,
    emit_grouped,
    reemit,
)
from rlx_mlir.rules import JVP, VMAP  # noqa: E402

if TYPE_CHECKING:
    from rlx_mlir.transforms.jvp import JvpContext
    from rlx_mlir.transforms.vmap import VmapContext

JVP.register(Conv2dBackwardInputOp, Conv2dBackwardWeightOp)(
    lambda ctx, op, ta, tb: [bilinear_jvp(ctx, op, ta, tb)])


@JVP.register(MaxPool2dBackwardOp, MaxPool2dJvpOp)
def _jvp_argmax_linear(ctx: JvpContext, op: RlxOp, tx: Tensor | None,
                       t: Tensor | None) -> list[Tensor | None]:
    """The op applied to the tangent of its linear operand; no tangent through x."""
    x, _ = ctx.inputs(op)
    return [None if t is None else reemit(ctx.b, op, x, t)]


# ---------------------------------------------------------------- batching rules (SPEC 6.2)
# conv2d_backward_input: B folded into N when w is shared, else into the channels and
# groups (as conv2d). conv2d_backward_weight sums over N, so B can never go into N (RLX
# panics, SPEC 6.4): B always goes into the channels and groups, giving dw [B*O, C/G, ..].
# The max-pool ops fold B into N (a shared operand is lifted first).


@VMAP.register(Conv2dBackwardInputOp)
def _vmap_conv2d_backward_input(ctx: VmapContext, op: Conv2dBackwardInputOp,
                                xs: Sequence[Tensor], batched: Sequence[bool]) -> list[Tensor]:
    dy, w = xs
    b_dy, b_w = batched
    if not b_w:
        return [emit_folded(ctx, op, ctx.fold(dy), w)]
    dyc = batch_into_channels(ctx, ctx.lift(dy, b_dy))
    return [batch_from_channels(ctx, emit_grouped(ctx, op, 1, dyc, ctx.fold(w)))]


@VMAP.register(Conv2dBackwardWeightOp)
def _vmap_conv2d_backward_weight(ctx: VmapContext, op: Conv2dBackwardWeightOp,
                                 xs: Sequence[Tensor], batched: Sequence[bool]) -> list[Tensor]:
    x, dy = (batch_into_channels(ctx, ctx.lift(v, f)) for v, f in zip(xs, batched, strict=True))
    return [ctx.unfold(emit_grouped(ctx, op, 0, x, dy))]


@VMAP.register(MaxPool2dBackwardOp, MaxPool2dJvpOp)
def _vmap_max_pool2d_pair(ctx: VmapContext, op: RlxOp, xs: Sequence[Tensor],
                          batched: Sequence[bool]) -> list[Tensor]:
    """Both operands lifted and B folded into N."""
    return [emit_folded(ctx, op, *(ctx.fold(v) for v in ctx.lift_all(xs, batched)))]


OPS = [Conv2dBackwardInputOp, Conv2dBackwardWeightOp, MaxPool2dBackwardOp, MaxPool2dJvpOp]


# ---------------------------------------------------------------- LOWER rules
# The scattering gradients are written as gathers: dy is spread onto a filled grid at its
# stride positions (a strided tensor.insert_slice) and each position gathers its taps
# (max_pool2d_backward; conv2d's dx at stride 1 or in the direct form), or, for a strided
# conv2d's dx through im2col, each output phase (the input rows and columns one stride
# position reaches) is a stride-1 correlation of dy with that phase's taps of the kernel.

import math  # noqa: E402
from typing import Any, NamedTuple  # noqa: E402

from xdsl.dialects import arith  # noqa: E402
from xdsl.ir import SSAValue  # noqa: E402

from rlx_mlir.dialects.conv import (  # noqa: E402
    PARALLEL,
    REDUCTION,
    Pair,
    affine_dims,
    affine_map,
    direct_correlation,
    direct_form,
    grouped_correlation,
    image_of,
    merge_dims,
    multiply_add,
    pad_hw,
    per_image,
    per_image_form,
    split_dim,
    window_patches,
    window_read,
)
from rlx_mlir.rules import LOWER  # noqa: E402


def kept_range(count: int, stride: int, offset: int, size: int) -> tuple[int, int]:
    """``[lo, hi)`` of the ``k < count`` with ``0 <= k * stride + offset < size``.

    ``kept_range(4, 2, -1, 6) == (1, 3)``
    """
    lo = max(0, -(offset // stride))
    hi = min(count, (size - 1 - offset) // stride + 1)
    return lo, max(lo, hi)


def spread_hw(e: Any, y: SSAValue, size: tuple[int, int], stride: tuple[int, int],
              offset: tuple[int, int], fill: float) -> SSAValue:
    """``y [..., Ho, Wo] -> [..., *size]`` with ``y[.., a, b]`` at ``(a sh + oh, b sw + ow)``
    and ``fill`` elsewhere; entries that land outside are dropped."""
    shape, etype = shape_of(y.type), y.type.element_type  # type: ignore[attr-defined]
    lead = [0] * (len(shape) - 2)
    ranges = [kept_range(*args) for args in zip(shape[-2:], stride, offset, size, strict=True)]
    grid = e.fill(fill, [*shape[:-2], *size], etype)
    if any(lo == hi for lo, hi in ranges):
        return grid
    part = y
    if any((lo, hi) != (0, count) for (lo, hi), count in zip(ranges, shape[-2:], strict=True)):
        part = e.extract_slice(y, [*lead, *(lo for lo, _ in ranges)],
                               [*shape[:-2], *(hi - lo for lo, hi in ranges)])
    at = [lo * s + o for (lo, _), s, o in zip(ranges, stride, offset, strict=True)]
    return e.insert_slice(part, grid, [*lead, *at], [1] * len(lead) + list(stride))


class PhaseTaps(NamedTuple):
    """The taps of one output phase along one spatial axis (see :func:`phase_taps`)."""

    first: int
    step: int
    count: int
    base: int
    """``dy`` row of the first tap for phase row 0; tap ``t`` reads ``base - t * shift``."""
    shift: int


def phase_taps(phase: int, pad: int, kernel: int, stride: int, dilation: int
               ) -> PhaseTaps | None:
    """Taps ``i`` that reach input rows ``h = phase + stride * q`` of a strided conv (those
    with ``phase + pad - i * dilation`` a multiple of ``stride``; None if there are none):
    an arithmetic progression, each tap reading ``dy[q + base - t * shift]``.

    ``phase_taps(1, 1, 3, 2, 1) == PhaseTaps(0, 2, 2, 1, 1)``: taps 0 and 2.
    """
    step = stride // math.gcd(dilation, stride)
    first = next((i for i in range(min(step, kernel))
                  if (phase + pad - i * dilation) % stride == 0), None)
    if first is None:
        return None
    count = (kernel - 1 - first) // step + 1
    base = (phase + pad - first * dilation) // stride
    return PhaseTaps(first, step, count, base, step * dilation // stride)


@LOWER.register(Conv2dBackwardInputOp)
def _lower_conv2d_backward_input(op: Conv2dBackwardInputOp, e: Any, dy: SSAValue,
                                 w: SSAValue) -> SSAValue:
    """A strided conv's input gradient through im2col: one correlation per output phase
    (:func:`input_gradient_by_phases`); otherwise a correlation of the zero-spread ``dy``
    (:func:`input_gradient_spread`), one image at a time (:func:`per_image`) for a big
    dense conv, as the forward."""
    cfg = conv2d_config(op.py_attrs())
    out_shape = tuple(shape_of(op.result.type))
    c_out, c_in = shape_of(w.type)[:2]
    g = cfg.groups
    as_correlation = (out_shape[0], g, out_shape[1] // g, *out_shape[2:])
    by_image = per_image_form(op, as_correlation, (c_in, c_out // g, *shape_of(w.type)[2:]))
    spread = cfg.stride == (1, 1) or (direct_form(c_out // g, g) and not by_image)
    gradient = input_gradient_spread if spread else input_gradient_by_phases
    if by_image:
        dtype = dy.type.element_type  # type: ignore[attr-defined]
        return per_image(e, out_shape, dtype, lambda t, n: gradient(
            t, image_of(t, dy, n), w, cfg, (1, *out_shape[1:])))
    return gradient(e, dy, w, cfg, out_shape)


def input_gradient_spread(e: Any, dy: SSAValue, w: SSAValue, cfg: Conv2dConfig,
                          out_shape: tuple[int, ...]) -> SSAValue:
    """``dx[n,g,c,h,x] = sum_{o,i,j} zdy[n,g,o, h + (kh-1-i) dh, ..] * w[g,o,c,i,j]``
    where ``zdy`` is dy spread at stride positions, offset by ``(kh-1) dh - ph``. For the
    direct form (few channels per group) at stride 2 this measured faster than the phases
    (depthwise ``32x64x56x56``: 8.0 against 9.1 ms): their strided inserts cost more than
    the taps on zeros."""
    n, c_in, h, wd = out_shape
    kernel = shape_of(w.type)[2:]
    reach = tuple((k - 1) * d for k, d in zip(kernel, cfg.dilation, strict=True))
    size = (h + reach[0], wd + reach[1])
    offset = (reach[0] - cfg.padding[0], reach[1] - cfg.padding[1])
    zdy = spread_hw(e, dy, size, cfg.stride, offset, 0.0)
    g = cfg.groups
    init = e.fill(0.0, (n, g, c_in // g, h, wd), dy.type.element_type)  # type: ignore[attr-defined]
    flipped = (-cfg.dilation[0], -cfg.dilation[1])
    correlate = direct_correlation if direct_form(shape_of(w.type)[0] // g, g) else grouped_correlation
    dx = correlate(e, split_dim(e, zdy, 1, g), split_dim(e, w, 0, g), init,
                   (1, 1), flipped, reach, weight_out_first=False)
    return merge_dims(e, dx, 1)


def input_gradient_by_phases(e: Any, dy: SSAValue, w: SSAValue, cfg: Conv2dConfig,
                             out_shape: tuple[int, ...]) -> SSAValue:
    """Per output phase ``(rh, rw)`` (``stride`` x ``stride`` of them): the input rows
    ``h = rh + sh * q`` are reached only by the taps of :func:`phase_taps`, so
    ``dx[n,g,c, rh + sh q, ..] = sum_{o,t,u} dy[n,g,o, q + base - t shift, ..] *
    w[g,o,c, first + t step, ..]``, a stride-1 correlation of ``dy`` with a strided slice
    of the kernel; the phases are inserted at stride positions. Correlating the
    zero-spread ``dy`` did ``sh * sw`` times the matmul work (``32x64x56x56``, 3x3,
    stride 2: 62 -> 25 ms)."""
    n, c_in, h, wd = out_shape
    dx = e.fill(0.0, out_shape, dy.type.element_type)  # type: ignore[attr-defined]
    for rh in range(min(cfg.stride[0], h)):
        for rw in range(min(cfg.stride[1], wd)):
            taps = [phase_taps(r, p, k, s, d) for r, p, k, s, d in zip(
                (rh, rw), cfg.padding, shape_of(w.type)[2:], cfg.stride, cfg.dilation,
                strict=True)]
            if None not in taps:
                phase = _input_gradient_phase(e, dy, w, cfg, (rh, rw), taps, (h, wd))  # type: ignore[arg-type]
                dx = e.insert_slice(phase, dx, [0, 0, rh, rw], [1, 1, *cfg.stride])
    return dx


def _input_gradient_phase(e: Any, dy: SSAValue, w: SSAValue, cfg: Conv2dConfig,
                          phase: Pair, taps: list[PhaseTaps], hw: Pair) -> SSAValue:
    """``dx[:, :, rh::sh, rw::sw]`` of conv2d_backward_input (``dy`` zero-padded so that
    every tap's row is in range)."""
    n, g = shape_of(dy.type)[0], cfg.groups
    c_out, c_per_group = shape_of(w.type)[:2]
    rows = [(size - r + s - 1) // s for size, r, s in zip(hw, phase, cfg.stride, strict=True)]
    low = [max(0, t.shift * (t.count - 1) - t.base) for t in taps]
    high = [max(0, q - 1 + t.base - (ho - 1))
            for q, t, ho in zip(rows, taps, shape_of(dy.type)[2:], strict=True)]
    dy_p = pad_hw(e, dy, tuple(low), tuple(high), 0.0)  # type: ignore[arg-type]
    kernel = e.extract_slice(w, [0, 0, taps[0].first, taps[1].first],
                             [c_out, c_per_group, taps[0].count, taps[1].count],
                             [1, 1, taps[0].step, taps[1].step])
    init = e.fill(0.0, (n, g, c_per_group, *rows), dy.type.element_type)  # type: ignore[attr-defined]
    dx = grouped_correlation(e, split_dim(e, dy_p, 1, g), split_dim(e, kernel, 0, g), init, (1, 1),
                   (-taps[0].shift, -taps[1].shift),
                   (taps[0].base + low[0], taps[1].base + low[1]), weight_out_first=False)
    return merge_dims(e, dx, 1)


@LOWER.register(Conv2dBackwardWeightOp)
def _lower_conv2d_backward_weight(op: Conv2dBackwardWeightOp, e: Any, x: SSAValue,
                                  dy: SSAValue) -> SSAValue:
    """``dw[g,o,c,i,j] = sum_{n,y,x} xp[n,g,c, y sh + i dh, x sw + j dw] * dy[n,g,o,y,x]``."""
    cfg = conv2d_config(op.py_attrs())
    c_out, c_per_group, kh, kw = shape_of(op.result.type)
    g = cfg.groups
    n, o, ho, wo = shape_of(dy.type)
    if o <= ho * wo and per_image_form(op, (n, g, o // g, ho, wo), shape_of(op.result.type)):
        return per_image_weight_gradient(e, x, dy, shape_of(op.result.type), cfg)
    xp = split_dim(e, pad_hw(e, x, cfg.padding, cfg.padding, 0.0), 1, g)
    init = e.fill(0.0, (g, c_out // g, c_per_group, kh, kw), x.type.element_type)  # type: ignore[attr-defined]
    direct = g > 1 and c_per_group * (c_out // g) <= WEIGHT_DIRECT_MAX_PAIRS
    weight = direct_weight_gradient if direct else im2col_weight_gradient
    return merge_dims(e, weight(e, xp, split_dim(e, dy, 1, g), init, cfg), 0)


WEIGHT_DIRECT_MAX_PAIRS = 64
"""Grouped weight gradients with at most this many (input, output) channel pairs per group
take :func:`direct_weight_gradient`, which sweeps each image's planes once per pair
(``bench/conv_ops.py``, ``32x64x56x56``: depthwise 7.6 ms with the forward against im2col's
~27; 4x4 pairs 27 against 41; 8x8 a tie, 53 against 55; 16x16 93 against 80)."""


def per_image_weight_gradient(e: Any, x: SSAValue, dy: SSAValue, w_shape: Sequence[int],
                              cfg: Conv2dConfig) -> SSAValue:
    """A weight gradient one image at a time (:func:`per_image`, as the forward): each
    image's ``dy[n] @ patches(x[n])^T`` per group (:func:`im2col_weight_gradient` of one
    image, whose patches stay in cache) goes to its row of a ``[N, G, O/G, C, KH, KW]``
    tensor, then the rows are summed. Over the whole batch the patches went to memory and
    back. (Summed in a loop-carried accumulator instead, one-shot bufferization saw a
    read-after-write conflict on it.) Taken when ``O <= Ho*Wo``: the rows are then no
    bigger than the whole batch's patches; also for per-image products too small for the
    packed matmul (unpacked on in-cache patches), with the forward: ``64x64x28x28`` 37 ->
    23 ms (torch 19), ``32x64x56x56`` at stride 2 24 -> 13 ms (torch 14), no shape of
    ``bench`` slower."""
    dtype = x.type.element_type  # type: ignore[attr-defined]
    g = cfg.groups
    grouped = [1, g, w_shape[0] // g, *w_shape[1:]]  # one image

    def one(t: Any, n: SSAValue) -> SSAValue:
        xp = split_dim(t, pad_hw(t, image_of(t, x, n), cfg.padding, cfg.padding, 0.0), 1, g)
        dw = im2col_weight_gradient(t, xp, split_dim(t, image_of(t, dy, n), 1, g),
                                    t.fill(0.0, grouped[1:], dtype), cfg)
        return t.reshape(dw, grouped)

    rows = per_image(e, [shape_of(x.type)[0], *grouped[1:]], dtype, one)
    dims = affine_dims(6)
    summed = e.generic([rows], [e.fill(0.0, grouped[1:], dtype)],
                       [affine_map(6, dims), affine_map(6, dims[1:])],
                       [REDUCTION] + [PARALLEL] * 5, lambda s, v, acc: s.add(acc, v))
    return merge_dims(e, summed, 0)


def im2col_weight_gradient(e: Any, xp: SSAValue, dy: SSAValue, init: SSAValue,
                           cfg: Conv2dConfig) -> SSAValue:
    """Loops ``(g, o, c, i, j | n, y, x)`` over the :func:`window_patches` of ``xp``: per
    group a ``[O, N*Ho*Wo] @ [N*Ho*Wo, C*KH*KW]`` matmul."""
    kernel = tuple(shape_of(init.type)[3:])
    patches = window_patches(e, xp, tuple(shape_of(dy.type)[3:]), kernel,  # type: ignore[arg-type]
                             cfg.stride, cfg.dilation)
    gg, o, c, i, j, n, y, xo = affine_dims(8)
    maps = [affine_map(8, [gg, c, i, j, n, y, xo]), affine_map(8, [n, gg, o, y, xo]),
            affine_map(8, [gg, o, c, i, j])]
    return e.generic([patches, dy], [init], maps, [PARALLEL] * 5 + [REDUCTION] * 3, multiply_add)


def direct_weight_gradient(e: Any, xp: SSAValue, dy: SSAValue, init: SSAValue,
                           cfg: Conv2dConfig) -> SSAValue:
    """Few channels per group: per-column partial sums ``p[g,o,c,i,j,x] = sum_{n,y}
    xp[..] * dy[..]``, loops ``(g | n | o, c | y | i, j, x)`` (an image's planes of the
    group stay in cache for every channel pair and tap, and the innermost loop runs along
    the row), then ``dw = sum_x p``. The im2col form wrote KH*KW copies of the input for a
    matmul with M = O/G."""
    wo = shape_of(dy.type)[-1]
    g, n, o, c, y, i, j, x = affine_dims(8)
    read = [window_read(y, i, cfg.stride[0], cfg.dilation[0]),
            window_read(x, j, cfg.stride[1], cfg.dilation[1])]
    maps = [affine_map(8, [n, g, c, *read]), affine_map(8, [n, g, o, y, x]),
            affine_map(8, [g, o, c, i, j, x])]
    iterators = [PARALLEL, REDUCTION, PARALLEL, PARALLEL, REDUCTION] + [PARALLEL] * 3
    zeros = e.fill(0.0, (*shape_of(init.type), wo), init.type.element_type)  # type: ignore[attr-defined]
    partial = e.generic([xp, dy], [zeros], maps, iterators, multiply_add)
    dims = affine_dims(6)
    return e.generic([partial], [init], [affine_map(6, dims), affine_map(6, dims[:5])],
                     [PARALLEL] * 5 + [REDUCTION], lambda s, v, acc: s.add(acc, v))


TAPS_OUTSIDE_PIXELS = [PARALLEL, PARALLEL, REDUCTION, REDUCTION, PARALLEL, PARALLEL]
"""Loops ``(n, c | i, j | y, x)`` of the first-argmax fold: each tap sweeps a whole output
plane, so the innermost loop runs along output rows and LLVM vectorizes its compares and
selects (with the taps innermost every pixel was a scalar fold over its window: a 3x3/2
max-pool backward on [32, 32, 32, 32] spent 10.6 ms there, now 2.9). The plain window
sums and maxima keep the taps innermost: measured faster for them."""


def in_bounds_mask(size: int, pad: int) -> np.ndarray:
    """``[size + 2 pad]`` bools: True on the unpadded positions."""
    mask = np.zeros(size + 2 * pad, bool)
    mask[pad:pad + size] = True
    return mask


def tap_numbers(kernel: tuple[int, int]) -> np.ndarray:
    """``[kh, kw]`` int32: the row-major tap index ``i * kw + j``."""
    return np.arange(kernel[0] * kernel[1], dtype=np.int32).reshape(kernel)


def _first_argmax_body(s: Any, v: Any, in_h: Any, in_w: Any, tap: Any, peak: Any,
                       best: Any) -> list[Any]:
    """Fold ``(peak, best)`` with an in-bounds tap: a larger value (NaN counts as largest)
    wins, an equal one (NaN equals NaN) wins when its tap is earlier. Order-independent."""
    v_nan, peak_nan = s.cmp("ne", v, v), s.cmp("ne", peak, peak)
    new_nan = s.emit(arith.AndIOp(v_nan, s.cmp("eq", peak_nan, False)))
    greater = s.emit(arith.OrIOp(s.cmp("gt", v, peak), new_nan))
    same = s.emit(arith.OrIOp(s.cmp("eq", v, peak), s.emit(arith.AndIOp(v_nan, peak_nan))))
    tie_won = s.emit(arith.AndIOp(same, s.cmp("lt", tap, best)))
    valid = s.emit(arith.AndIOp(in_h, in_w))
    take = s.emit(arith.AndIOp(valid, s.emit(arith.OrIOp(greater, tie_won))))
    return [s.select(take, v, peak), s.select(take, tap, best)]


def first_argmax_taps(e: Any, x: SSAValue, cfg: Pool2dConfig,
                      out_shape: tuple[int, ...]) -> SSAValue:
    """i32 ``[N, C, Ho, Wo]``: the tap ``i * kw + j`` of each window's first in-bounds max
    (one generic with two outputs, the window max and its tap)."""
    h, wd = shape_of(x.type)[2:]
    dtype = x.type.element_type  # type: ignore[attr-defined]
    xp = pad_hw(e, x, cfg.padding, cfg.padding, -np.inf)
    masks = [e.constant(in_bounds_mask(size, pad)) for size, pad in zip((h, wd), cfg.padding, strict=True)]
    taps = e.constant(tap_numbers(cfg.kernel))
    n, c, i, j, y, xo = affine_dims(6)
    rows, cols = window_read(y, i, cfg.stride[0], 1), window_read(xo, j, cfg.stride[1], 1)
    out_map = affine_map(6, [n, c, y, xo])
    maps = [affine_map(6, [n, c, rows, cols]), affine_map(6, [rows]), affine_map(6, [cols]),
            affine_map(6, [i, j]), out_map, out_map]
    inits = [e.fill(-np.inf, out_shape, dtype), e.fill(cfg.kernel[0] * cfg.kernel[1], out_shape, "i32")]
    fold = e.generic([xp, *masks, taps], inits, maps, TAPS_OUTSIDE_PIXELS, _first_argmax_body)
    return fold.results[1]


@LOWER.register(MaxPool2dBackwardOp)
def _lower_max_pool2d_backward(op: MaxPool2dBackwardOp, e: Any, x: SSAValue,
                               dy: SSAValue) -> SSAValue:
    """``dx[n,c,h,x] = sum_{i,j} (zbest[..] == i kw + j ? zdy[..] : 0)`` reading the spread
    ``dy`` and argmax taps at ``(h + kh-1-i, x + kw-1-j)`` (gather form of the scatter-add)."""
    cfg = pool2d_config(op.py_attrs())
    (kh, kw), (ph, pw) = cfg.kernel, cfg.padding
    h, wd = shape_of(x.type)[2:]
    size, offset = (h + kh - 1, wd + kw - 1), (kh - 1 - ph, kw - 1 - pw)
    best = first_argmax_taps(e, x, cfg, shape_of(dy.type))
    zdy = spread_hw(e, dy, size, cfg.stride, offset, 0.0)
    zbest = spread_hw(e, best, size, cfg.stride, offset, -1)
    n, c, y, xo, i, j = affine_dims(6)
    read = affine_map(6, [n, c, window_read(y, i, 1, -1, kh - 1), window_read(xo, j, 1, -1, kw - 1)])
    maps = [read, read, affine_map(6, [i, j]), affine_map(6, [n, c, y, xo])]
    init = e.fill(0.0, shape_of(x.type), x.type.element_type)  # type: ignore[attr-defined]
    return e.generic([zdy, zbest, e.constant(tap_numbers(cfg.kernel))], [init], maps,
                     [PARALLEL] * 4 + [REDUCTION] * 2,
                     lambda s, g, b, t, acc: s.add(acc, s.select(s.cmp("eq", b, t), g, 0.0)))


@LOWER.register(MaxPool2dJvpOp)
def _lower_max_pool2d_jvp(op: MaxPool2dJvpOp, e: Any, x: SSAValue, tx: SSAValue) -> SSAValue:
    """``out[n,c,y,x] = sum_{i,j} (best[n,c,y,x] == i kw + j ? txp[n,c, y sh + i, x sw + j]
    : 0)``: the window's first-argmax tap (as in max_pool2d_backward) selects the tangent."""
    cfg = pool2d_config(op.py_attrs())
    out_shape = shape_of(op.result.type)
    best = first_argmax_taps(e, x, cfg, out_shape)
    txp = pad_hw(e, tx, cfg.padding, cfg.padding, 0.0)
    n, c, y, xo, i, j = affine_dims(6)
    out_map = affine_map(6, [n, c, y, xo])
    read = affine_map(6, [n, c, window_read(y, i, cfg.stride[0], 1),
                          window_read(xo, j, cfg.stride[1], 1)])
    maps = [read, out_map, affine_map(6, [i, j]), out_map]
    init = e.fill(0.0, out_shape, tx.type.element_type)  # type: ignore[attr-defined]
    return e.generic([txp, best, e.constant(tap_numbers(cfg.kernel))], [init], maps,
                     [PARALLEL] * 4 + [REDUCTION] * 2,
                     lambda s, t, b, k, acc: s.add(acc, s.select(s.cmp("eq", b, k), t, 0.0)))
