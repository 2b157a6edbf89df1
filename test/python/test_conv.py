"""Interpreter results of the conv family against PyTorch, plus its numpy helpers."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.conv import (
    Conv2dConfig,
    Pool2dConfig,
    col2im,
    conv_output_size,
    pad_nchw,
    pool2d_config,
    window_view,
)

DTYPES = {np.float32: "f32", np.float64: "f64"}
TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


def run_conv(x, w, bias=None, **attrs):
    dtype = DTYPES[x.dtype.type]
    b = rlx.Builder("f")
    args = [b.input("x", x.shape, dtype), b.input("w", w.shape, dtype)]
    if bias is not None:
        args.append(b.input("b", bias.shape, dtype))
    b.ret(b.conv2d(*args, **attrs))
    return rlx.interpret(b.module, *[a for a in (x, w, bias) if a is not None])[0]


def run_pool(kind, x, **attrs):
    b = rlx.Builder("f")
    b.ret(getattr(b, kind)(b.input("x", x.shape, DTYPES[x.dtype.type]), **attrs))
    return rlx.interpret(b.module, x)[0]


# x shape, w shape, stride, padding, dilation, groups
CONV_CASES = {
    "plain": ((2, 3, 7, 7), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    "one_by_one": ((2, 5, 4, 6), (3, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    "stride_padding": ((1, 3, 9, 8), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    "non_square": ((2, 2, 9, 6), (5, 2, 3, 2), (2, 1), (1, 2), (1, 1), 1),
    "dilation": ((1, 3, 10, 9), (2, 3, 3, 3), (1, 2), (2, 1), (2, 3), 1),
    "groups": ((2, 4, 6, 6), (6, 2, 3, 3), (1, 1), (1, 1), (1, 1), 2),
    "depthwise": ((2, 3, 7, 5), (3, 1, 3, 3), (2, 1), (1, 1), (1, 1), 3),
    "depthwise_multiplier": ((1, 2, 6, 6), (4, 1, 2, 3), (1, 2), (0, 1), (2, 1), 2),
    "everything": ((3, 6, 11, 8), (9, 2, 3, 2), (3, 2), (2, 1), (2, 2), 3),
}


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_matches_torch(case, with_bias, dtype, rng):
    xs, ws, stride, padding, dilation, groups = CONV_CASES[case]
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    bias = rng.standard_normal(ws[0]).astype(dtype) if with_bias else None
    got = run_conv(x, w, bias, stride=stride, padding=padding, dilation=dilation, groups=groups)
    want = F.conv2d(
        torch.from_numpy(x), torch.from_numpy(w),
        None if bias is None else torch.from_numpy(bias),
        stride=stride, padding=padding, dilation=dilation, groups=groups,
    ).numpy()
    assert got.dtype == dtype
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, **TOL[dtype])


def test_conv2d_defaults_are_unit_stride_no_padding(rng):
    x = rng.standard_normal((1, 2, 5, 4)).astype(np.float32)
    w = rng.standard_normal((3, 2, 2, 2)).astype(np.float32)
    want = F.conv2d(torch.from_numpy(x), torch.from_numpy(w)).numpy()
    np.testing.assert_allclose(run_conv(x, w), want, **TOL[np.float32])


# x shape, kernel, stride (None = default), padding (None = default)
POOL_CASES = {
    "default_stride": ((2, 3, 8, 6), (2, 2), None, None),
    "overlapping": ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1)),
    "non_square": ((2, 2, 9, 7), (3, 2), (2, 1), (1, 1)),
    "unit_stride_padding": ((1, 3, 5, 6), (3, 3), (1, 1), (1, 0)),
    "kernel_one": ((1, 1, 4, 5), (1, 1), (2, 3), None),
    "uneven": ((2, 1, 10, 5), (4, 2), (3, 2), (2, 1)),
}


def pool_attrs(kernel, stride, padding):
    attrs = {"kernel": kernel}
    if stride is not None:
        attrs["stride"] = stride
    if padding is not None:
        attrs["padding"] = padding
    return attrs


@pytest.mark.parametrize("case", sorted(POOL_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool2d_matches_torch(case, dtype, rng):
    xs, kernel, stride, padding = POOL_CASES[case]
    x = rng.standard_normal(xs).astype(dtype)
    got = run_pool("max_pool2d", x, **pool_attrs(kernel, stride, padding))
    want = F.max_pool2d(
        torch.from_numpy(x), kernel, stride=stride or kernel, padding=padding or 0
    ).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", sorted(POOL_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_avg_pool2d_matches_torch_count_include_pad(case, dtype, rng):
    xs, kernel, stride, padding = POOL_CASES[case]
    x = rng.standard_normal(xs).astype(dtype)
    got = run_pool("avg_pool2d", x, **pool_attrs(kernel, stride, padding))
    want = F.avg_pool2d(
        torch.from_numpy(x), kernel, stride=stride or kernel, padding=padding or 0,
        count_include_pad=True,
    ).numpy()
    assert got.dtype == dtype
    np.testing.assert_allclose(got, want, **TOL[dtype])


def test_max_pool_padding_never_wins():
    x = -np.arange(1, 17, dtype=np.float64).reshape(1, 1, 4, 4)
    got = run_pool("max_pool2d", x, kernel=(3, 3), stride=(2, 2), padding=(1, 1))
    np.testing.assert_array_equal(got, [[[[-1, -2], [-5, -6]]]])


def test_avg_pool_divides_by_full_kernel_area():
    x = np.array([[[[1.0, 2.0], [3.0, 4.0]]]], np.float32)
    got = run_pool("avg_pool2d", x, kernel=(2, 2), padding=(1, 1))
    np.testing.assert_array_equal(got, [[[[0.25, 0.5], [0.75, 1.0]]]])


# ---------------------------------------------------------------- helpers


def test_conv_output_size():
    assert conv_output_size(8, 3, 2, 1) == 4
    assert conv_output_size(7, 3, 1, 0, dilation=2) == 3
    assert conv_output_size(2, 3, 1, 0) == 0


def test_pool_config_defaults_stride_to_kernel():
    assert pool2d_config({"kernel": (3, 2)}) == Pool2dConfig((3, 2), (3, 2), (0, 0))
    assert Conv2dConfig() == Conv2dConfig((1, 1), (0, 0), (1, 1), 1)


def test_window_view_indexing(rng):
    x = rng.standard_normal((2, 3, 9, 8))
    view = window_view(x, (3, 2), (2, 3), (2, 1))
    assert view.shape == (2, 3, 3, 3, 3, 2)
    for i, j, ki, kj in [(0, 0, 0, 0), (2, 1, 2, 1), (1, 2, 1, 0)]:
        np.testing.assert_array_equal(view[:, :, i, j, ki, kj], x[:, :, i * 2 + ki * 2, j * 3 + kj])


def test_pad_nchw_pads_only_spatial_axes():
    x = np.ones((1, 2, 2, 3), np.float32)
    padded = pad_nchw(x, (1, 2), value=-5.0)
    assert padded.shape == (1, 2, 4, 7)
    assert padded[0, 0, 0, 0] == -5.0 and padded[0, 1, 1, 2] == 1.0
    assert padded.sum() == 12 - 5.0 * (2 * 28 - 12)


@pytest.mark.parametrize("stride,padding,dilation", [
    ((1, 1), (0, 0), (1, 1)), ((2, 1), (1, 2), (1, 2)), ((3, 2), (2, 1), (2, 1)),
])
def test_col2im_is_the_adjoint_of_im2col(stride, padding, dilation, rng):
    x = rng.standard_normal((2, 3, 8, 7))
    cols = window_view(pad_nchw(x, padding), (3, 2), stride, dilation)
    c = rng.standard_normal(cols.shape)
    back = col2im(c, (8, 7), stride, padding, dilation)
    assert back.shape == x.shape
    np.testing.assert_allclose(np.sum(cols * c), np.sum(x * back), rtol=1e-12)


# ---------------------------------------------------------------- verifier through the builder


@pytest.mark.parametrize("attrs,x_shape,w_shape,message", [
    ({"groups": 2}, (1, 3, 8, 8), (4, 1, 3, 3), "groups 2 must divide both C_in 3 and C_out 4"),
    ({}, (1, 3, 8, 8), (4, 2, 3, 3), "must have C_in/groups = 3 input channels"),
    ({"stride": (1, 1, 1)}, (1, 3, 8, 8), (4, 3, 3, 3), "'stride' must have 2 entries"),
    ({"padding": (0, -1)}, (1, 3, 8, 8), (4, 3, 3, 3), "'padding' entries must be >= 0"),
    ({}, (1, 3, 2, 2), (4, 3, 3, 3), "output spatial size [0, 0] is < 1"),
])
def test_builder_rejects_bad_conv(attrs, x_shape, w_shape, message):
    b = rlx.Builder("f")
    with pytest.raises(RlxError, match=message.replace("[", r"\[").replace("]", r"\]")):
        b.conv2d(b.input("x", x_shape), b.input("w", w_shape), **attrs)


def test_builder_rejects_pool_without_kernel():
    b = rlx.Builder("f")
    with pytest.raises(RlxError, match="missing required attribute 'kernel'"):
        b.max_pool2d(b.input("x", (1, 1, 4, 4)))
