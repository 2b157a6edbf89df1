"""Differential tests against PyTorch: conv2d (and 1-D convolution as H = 1), max / avg
pooling; forward and gradients, native and interpreter (helpers in
test_differential_torch.py). Pooling follows SPEC 2.1.16: floor output sizes (no
ceil_mode), max ignores padding, avg divides by the whole window (count_include_pad=True,
torch's default)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_differential_torch import Diff, randn

import rlx_mlir as rlx

# (x shape, w shape, stride, padding, dilation, groups, bias)
CONV_GROUPS = {
    "basic": [
        ((2, 3, 9, 9), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1, True),
        ((1, 3, 9, 7), (5, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1, False),      # batch 1, odd
        ((2, 2, 11, 10), (3, 2, 5, 4), (3, 2), (2, 1), (1, 1), 1, True),     # kernel > stride
        ((1, 4, 6, 6), (6, 4, 1, 1), (1, 1), (0, 0), (1, 1), 1, True),       # 1x1 fast path
        ((2, 3, 5, 5), (2, 3, 5, 5), (1, 1), (0, 0), (1, 1), 1, True),       # kernel = input
        ((1, 2, 8, 7), (3, 2, 2, 2), (3, 3), (0, 0), (1, 1), 1, False),      # dx phase, no taps
        ((2, 4, 9, 9), (4, 4, 3, 3), (2, 2), (1, 1), (2, 2), 1, True),       # even dilation
    ],
    "dilation_groups": [
        ((2, 4, 13, 12), (6, 2, 3, 3), (1, 2), (2, 2), (2, 3), 2, True),    # dilation + groups
        ((1, 6, 8, 9), (6, 1, 3, 3), (1, 1), (1, 1), (1, 1), 6, True),      # depthwise
        ((2, 4, 10, 10), (8, 1, 3, 3), (2, 2), (1, 1), (1, 1), 4, False),   # depth multiplier 2
        ((2, 3, 11, 9), (3, 1, 3, 2), (2, 1), (2, 1), (2, 3), 3, True),     # depthwise, dilated
        ((1, 6, 7, 7), (3, 2, 2, 2), (2, 2), (0, 0), (2, 2), 3, True),      # stride = kernel
        ((1, 2, 3, 2), (2, 2, 1, 2), (2, 1), (3, 2), (1, 1), 1, False),     # pad beyond reach
        ((2, 8, 9, 9), (8, 4, 3, 3), (2, 1), (1, 2), (1, 1), 2, True),      # 4 per group: a
        ((1, 6, 10, 9), (6, 3, 3, 2), (1, 1), (2, 1), (2, 1), 2, False),    # generic per channel
    ],
}


def _conv_args(cases, rng):
    args = []
    for xs, ws, *_rest, bias in cases:
        args += [randn(rng, *xs), randn(rng, *ws)]
        if bias:
            args.append(randn(rng, ws[0]))
    return args


def _conv_fns(cases):
    def run(lib, args):
        outs, i = [], 0
        for _xs, _ws, stride, padding, dilation, groups, bias in cases:
            x, w = args[i], args[i + 1]
            b = args[i + 2] if bias else None
            i += 3 if bias else 2
            if lib == "torch":
                outs.append(F.conv2d(x, w, b, stride, padding, dilation, groups))
            else:
                outs.append(rlx.nn.conv2d(x, w, b, stride, padding, dilation, groups))
        return tuple(outs)
    return (lambda *a: run("rlx", a)), (lambda *a: run("torch", a))


@pytest.mark.parametrize("group", list(CONV_GROUPS))
def test_conv2d_against_torch(group):
    cases = CONV_GROUPS[group]
    args = _conv_args(cases, np.random.default_rng(len(group)))
    rf, tf = _conv_fns(cases)
    Diff(rf, tf, args, wrt=range(len(args)), names=[str(c[:6]) for c in cases]).check()


def test_conv1d_as_height_one_against_torch_conv1d():
    """1-D convolution: rank-4 NCHW with H = 1 against F.conv1d (stride, padding,
    dilation, depthwise groups, odd length)."""
    rng = np.random.default_rng(21)
    x1, w1, b1 = randn(rng, 2, 3, 17), randn(rng, 4, 3, 5), randn(rng, 4)
    x2, w2 = randn(rng, 1, 4, 9), randn(rng, 4, 1, 3)

    def rf(x1, w1, b1, x2, w2):
        y1 = rlx.nn.conv2d(x1.reshape(2, 3, 1, 17), w1.reshape(4, 3, 1, 5), b1,
                           stride=(1, 2), padding=(0, 3), dilation=(1, 2))
        y2 = rlx.nn.conv2d(x2.reshape(1, 4, 1, 9), w2.reshape(4, 1, 1, 3), padding=(0, 1),
                           groups=4)
        return y1.reshape(2, 4, y1.shape[-1]), y2.reshape(1, 4, 9)

    def tf(x1, w1, b1, x2, w2):
        return (F.conv1d(x1, w1, b1, stride=2, padding=3, dilation=2),
                F.conv1d(x2, w2, padding=1, groups=4))

    Diff(rf, tf, [x1, w1, b1, x2, w2], wrt=range(5)).check()


def test_conv_relu_pool_chain_gradient():
    """A small CNN block (conv, relu, max pool, avg pool, flatten, matmul) end to end."""
    rng = np.random.default_rng(22)
    x, w, b, fc = randn(rng, 3, 2, 12, 11), randn(rng, 5, 2, 3, 3), randn(rng, 5), randn(rng, 20, 4)

    def rf(x, w, b, fc):
        h = rlx.nn.max_pool2d(rlx.nn.relu(rlx.nn.conv2d(x, w, b, padding=1)), 2)   # 6x5
        h = rlx.nn.avg_pool2d(h, (3, 2), stride=(3, 2), padding=(1, 0))            # 2x2
        return h.reshape(3, 20) @ fc

    def tf(x, w, b, fc):
        h = F.max_pool2d(torch.relu(F.conv2d(x, w, b, padding=1)), 2)
        h = F.avg_pool2d(h, (3, 2), stride=(3, 2), padding=(1, 0))
        return h.reshape(3, 20) @ fc

    Diff(rf, tf, [x, w, b, fc], wrt=range(4), separate=True).check()   # value_and_grad


# (x shape, kernel, stride, padding)
POOL_CASES = [
    ((2, 3, 8, 8), (2, 2), (2, 2), (0, 0)),
    ((1, 2, 9, 7), (3, 3), (2, 2), (1, 1)),      # odd sizes, floor, padding
    ((2, 1, 10, 11), (3, 2), (1, 3), (1, 1)),    # stride != kernel, overlapping windows
    ((1, 3, 7, 7), (2, 3), (3, 1), (1, 0)),      # stride > kernel: skipped rows
    ((1, 2, 5, 6), (5, 6), (5, 6), (2, 3)),      # whole-input window, maximal padding
    ((3, 2, 4, 4), (1, 1), (2, 2), (0, 0)),      # 1x1 kernel, strided
]


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_against_torch(kind):
    rng = np.random.default_rng(30 if kind == "max" else 31)
    args = [randn(rng, *c[0]) for c in POOL_CASES]
    rpool = rlx.nn.max_pool2d if kind == "max" else rlx.nn.avg_pool2d
    tpool = F.max_pool2d if kind == "max" else F.avg_pool2d
    rf = lambda *xs: tuple(rpool(x, k, s, p) for x, (_, k, s, p) in zip(xs, POOL_CASES, strict=True))  # noqa: E731
    tf = lambda *xs: tuple(tpool(x, k, s, p) for x, (_, k, s, p) in zip(xs, POOL_CASES, strict=True))  # noqa: E731
    Diff(rf, tf, args, wrt=range(len(args)), names=[str(c) for c in POOL_CASES]).check()


def test_max_pool_all_negative_with_padding_never_picks_the_padding():
    x = -np.abs(randn(np.random.default_rng(32), 1, 2, 5, 5)) - 1.0
    Diff(lambda t: rlx.nn.max_pool2d(t, 3, 2, 1), lambda t: F.max_pool2d(t, 3, 2, 1),
         [x], wrt=(0,)).check()


# ---------------------------------------------------------------- bad parameters


@pytest.mark.parametrize("kwargs", [
    {"groups": 2},                       # 3 input channels, groups 2
    {"stride": (0, 1)},
    {"padding": (-1, 0)},
    {"dilation": (0, 1)},
    {"padding": (0, 0), "dilation": (5, 5)},   # the dilated kernel exceeds the input
])
def test_invalid_conv_parameters_are_rlx_errors(kwargs):
    x, w = np.ones((1, 3, 8, 8), np.float32), np.ones((4, 3, 3, 3), np.float32)
    with pytest.raises(rlx.RlxError):
        rlx.jit(lambda a, k: rlx.nn.conv2d(a, k, **kwargs))(x, w)


@pytest.mark.parametrize("x_shape,w_shape", [((1, 3, 8, 8), (4, 2, 3, 3)),   # C_in mismatch
                                             ((3, 8, 8), (4, 3, 3, 3)),      # rank 3 input
                                             ((1, 3, 2, 2), (4, 3, 3, 3))])  # input < kernel
def test_invalid_conv_shapes_are_rlx_errors(x_shape, w_shape):
    with pytest.raises(rlx.RlxError):
        rlx.jit(lambda a, k: rlx.nn.conv2d(a, k))(np.ones(x_shape, np.float32),
                                                  np.ones(w_shape, np.float32))


@pytest.mark.parametrize("kernel,stride,padding", [((3, 3), (0, 1), (0, 0)),
                                                    ((2, 2), (2, 2), (2, 0)),   # pad > k/2
                                                    ((9, 9), (1, 1), (0, 0))])  # k > input
def test_invalid_pool_parameters_are_rlx_errors(kernel, stride, padding):
    x = np.ones((1, 1, 8, 8), np.float32)
    for pool in (rlx.nn.max_pool2d, rlx.nn.avg_pool2d):
        with pytest.raises(rlx.RlxError):
            rlx.jit(lambda a, pool=pool: pool(a, kernel, stride, padding))(x)


def test_pool_stride_zero_is_an_rlx_error():
    x = np.ones((1, 1, 4, 4), np.float32)
    for pool in (rlx.nn.max_pool2d, rlx.nn.avg_pool2d):
        with pytest.raises(rlx.RlxError, match="'stride' entries must be >= 1"):
            rlx.jit(lambda a, pool=pool: pool(a, 2, stride=0))(x)


def test_max_pool_ties_go_to_the_first_maximum_like_torch():
    """Integer-valued inputs (many tied maxima), overlapping windows: SPEC sends a tie's
    gradient to the first maximum of the window, as torch does."""
    rng = np.random.default_rng(33)
    cases = [((2, 3, 9, 9), 3, 2, 1), ((1, 2, 8, 7), (2, 3), (1, 2), (1, 1)),
             ((1, 2, 7, 7), 3, 1, 1)]
    args = [rng.integers(0, 3, c[0]).astype(np.float32) for c in cases]
    rf = lambda *xs: tuple(rlx.nn.max_pool2d(x, k, s, p) for x, (_, k, s, p) in zip(xs, cases, strict=True))  # noqa: E731
    tf = lambda *xs: tuple(F.max_pool2d(x, k, s, p) for x, (_, k, s, p) in zip(xs, cases, strict=True))  # noqa: E731
    Diff(rf, tf, args, wrt=range(len(args))).check()
