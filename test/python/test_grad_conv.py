"""Autodiff of the conv family: backward-op interpreters vs PyTorch, VJP rules vs finite
differences (check_grads, f64), double backward, and a small CNN vs torch.autograd."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx
from rlx_mlir.dialects.base import tensor
from rlx_mlir.testing import check_grads

DTYPES = {np.float32: "f32", np.float64: "f64"}
TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}

# x shape, w shape, stride, padding, dilation, groups
CONV_CASES = {
    "plain": ((2, 3, 7, 7), (4, 3, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    "one_by_one": ((2, 5, 4, 6), (3, 5, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    "stride_padding": ((1, 3, 9, 8), (4, 3, 3, 3), (2, 2), (1, 1), (1, 1), 1),
    "stride_leaves_rows_unread": ((1, 2, 8, 8), (3, 2, 3, 3), (2, 3), (0, 0), (1, 1), 1),
    "non_square": ((2, 2, 9, 6), (5, 2, 3, 2), (2, 1), (1, 2), (1, 1), 1),
    "dilation": ((1, 3, 10, 9), (2, 3, 3, 3), (1, 2), (2, 1), (2, 3), 1),
    "groups": ((2, 4, 6, 6), (6, 2, 3, 3), (1, 1), (1, 1), (1, 1), 2),
    "depthwise": ((2, 3, 7, 5), (3, 1, 3, 3), (2, 1), (1, 1), (1, 1), 3),
    "everything": ((3, 6, 11, 8), (9, 2, 3, 2), (3, 2), (2, 1), (2, 2), 3),
}

# x shape, kernel, stride, padding
POOL_CASES = {
    "default_stride": ((2, 3, 8, 6), (2, 2), (2, 2), (0, 0)),
    "overlapping_padded": ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1)),
    "unit_stride": ((1, 2, 5, 6), (3, 3), (1, 1), (1, 0)),
    "non_square": ((2, 2, 9, 7), (3, 2), (2, 1), (1, 1)),
    "uneven": ((2, 1, 10, 5), (4, 2), (3, 2), (2, 1)),
}


def conv_attrs(stride, padding, dilation, groups) -> dict:
    return dict(stride=stride, padding=padding, dilation=dilation, groups=groups)


def run_backward_op(name, a, b, result_shape=None, **attrs) -> np.ndarray:
    """Interpret ``rlx.<name>(a, b)`` with a caller-given result shape (when given)."""
    dtype = DTYPES[a.dtype.type]
    builder = rlx.Builder("f")
    args = [builder.input("a", a.shape, dtype), builder.input("b", b.shape, dtype)]
    out = None if result_shape is None else [tensor(result_shape, dtype)]
    builder.ret(builder.emit(name, *args, out=out, **attrs))
    return rlx.interpret(builder.module, a, b)[0]


def torch_conv_output(x, w, stride, padding, dilation, groups) -> tuple[int, ...]:
    y = F.conv2d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=padding,
                 dilation=dilation, groups=groups)
    return tuple(y.shape)


# ---------------------------------------------------------------- backward ops vs torch


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_backward_input_matches_torch(case, dtype, rng):
    xs, ws, *cfg = CONV_CASES[case]
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    dy = rng.standard_normal(torch_conv_output(x, w, *cfg)).astype(dtype)
    got = run_backward_op("conv2d_backward_input", dy, w, xs, **conv_attrs(*cfg))
    want = torch.nn.grad.conv2d_input(xs, torch.from_numpy(w), torch.from_numpy(dy), *cfg)
    assert got.dtype == dtype and got.shape == xs
    np.testing.assert_allclose(got, want.numpy(), **TOL[dtype])


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_backward_weight_matches_torch(case, dtype, rng):
    xs, ws, *cfg = CONV_CASES[case]
    x = rng.standard_normal(xs).astype(dtype)
    w = rng.standard_normal(ws).astype(dtype)
    dy = rng.standard_normal(torch_conv_output(x, w, *cfg)).astype(dtype)
    got = run_backward_op("conv2d_backward_weight", x, dy, ws, **conv_attrs(*cfg))
    want = torch.nn.grad.conv2d_weight(torch.from_numpy(x), ws, torch.from_numpy(dy), *cfg)
    assert got.dtype == dtype and got.shape == ws
    np.testing.assert_allclose(got, want.numpy(), **TOL[dtype])


def torch_max_pool_grad(x, dy, kernel, stride, padding) -> np.ndarray:
    xt = torch.from_numpy(x).requires_grad_()
    F.max_pool2d(xt, kernel, stride, padding).backward(torch.from_numpy(dy))
    return xt.grad.numpy()


@pytest.mark.parametrize("case", sorted(POOL_CASES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool2d_backward_matches_torch(case, dtype, rng):
    xs, kernel, stride, padding = POOL_CASES[case]
    x = rng.standard_normal(xs).astype(dtype)
    dy_shape = F.max_pool2d(torch.from_numpy(x), kernel, stride, padding).shape
    dy = rng.standard_normal(dy_shape).astype(dtype)
    got = run_backward_op("max_pool2d_backward", x, dy, kernel=kernel, stride=stride,
                          padding=padding)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, torch_max_pool_grad(x, dy, kernel, stride, padding),
                               **TOL[dtype])


def test_max_pool2d_backward_routes_to_argmax():
    """SPEC 8.3: 4x4 input 1..16, 2x2/2 pooling: the gradient lands at 5, 7, 13 and 15."""
    x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)
    dy = np.array([1, 2, 3, 4], np.float32).reshape(1, 1, 2, 2)
    got = run_backward_op("max_pool2d_backward", x, dy, kernel=(2, 2))
    assert got.ravel().nonzero()[0].tolist() == [5, 7, 13, 15]
    assert got.ravel()[[5, 7, 13, 15]].tolist() == [1, 2, 3, 4]


def test_max_pool2d_backward_tie_goes_to_first_max_in_row_major_order():
    # Window [[1, 3], [3, 3]]: the first 3 (row 0, column 1) gets all of dy.
    x = np.array([[1, 3], [3, 3]], np.float64).reshape(1, 1, 2, 2)
    got = run_backward_op("max_pool2d_backward", x, np.full((1, 1, 1, 1), 5.0), kernel=(2, 2))
    np.testing.assert_array_equal(got[0, 0], [[0, 5], [0, 0]])
    np.testing.assert_array_equal(got, torch_max_pool_grad(x, np.full((1, 1, 1, 1), 5.0),
                                                            (2, 2), (2, 2), (0, 0)))


def test_max_pool2d_backward_overlapping_ties_accumulate():
    # All-equal 3x3 input, 2x2 windows at stride 1: each window's top-left tap wins.
    x = np.zeros((1, 1, 3, 3), np.float32)
    dy = np.array([[1, 2], [4, 8]], np.float32).reshape(1, 1, 2, 2)
    got = run_backward_op("max_pool2d_backward", x, dy, kernel=(2, 2), stride=(1, 1))
    np.testing.assert_array_equal(got[0, 0], [[1, 2, 0], [4, 8, 0], [0, 0, 0]])
    np.testing.assert_array_equal(got, torch_max_pool_grad(x, dy, (2, 2), (1, 1), (0, 0)))


def test_max_pool2d_backward_shared_argmax_accumulates():
    # The centre 9 is the max of all four overlapping windows: it gets 1 + 2 + 3 + 4.
    x = np.array([[0, 1, 0], [1, 9, 1], [0, 1, 0]], np.float64).reshape(1, 1, 3, 3)
    dy = np.array([1, 2, 3, 4], np.float64).reshape(1, 1, 2, 2)
    got = run_backward_op("max_pool2d_backward", x, dy, kernel=(2, 2), stride=(1, 1))
    assert got[0, 0, 1, 1] == 10 and got.sum() == 10


def test_max_pool2d_backward_padding_never_wins():
    # Every tap is -inf, like the padding: the gradient still lands in bounds, on each
    # window's first in-bounds tap.
    x = np.full((1, 1, 3, 3), -np.inf)
    dy = np.arange(1, 5, dtype=np.float64).reshape(1, 1, 2, 2)
    got = run_backward_op("max_pool2d_backward", x, dy, kernel=(3, 3), stride=(2, 2),
                          padding=(1, 1))
    np.testing.assert_array_equal(got[0, 0], [[1, 2, 0], [3, 4, 0], [0, 0, 0]])


# ---------------------------------------------------------------- VJP rules: check_grads


def conv_module(xs, ws, stride, padding, dilation, groups, with_bias) -> rlx.Builder:
    b = rlx.Builder("f")
    x, w = b.param("x", xs), b.param("w", ws)
    bias = [b.param("b", (ws[0],))] if with_bias else []
    b.ret(b.conv2d(x, w, *bias, **conv_attrs(stride, padding, dilation, groups)))
    return b


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("with_bias", [False, True])
def test_conv2d_gradients(case, with_bias):
    report = check_grads(conv_module(*CONV_CASES[case], with_bias).module)
    assert [a.name for a in report.args] == ["x", "w", "b"][: 2 + with_bias]


@pytest.mark.parametrize("kind", ["max_pool2d", "avg_pool2d"])
@pytest.mark.parametrize("case", sorted(POOL_CASES))
def test_pool_gradients(kind, case):
    xs, kernel, stride, padding = POOL_CASES[case]
    b = rlx.Builder("f")
    b.ret(getattr(b, kind)(b.param("x", xs), kernel=kernel, stride=stride, padding=padding))
    check_grads(b.module)


def test_conv2d_bias_gradient_is_g_summed_over_n_h_w(rng):
    b = conv_module((2, 3, 5, 5), (4, 3, 3, 3), (1, 1), (1, 1), (1, 1), 1, True)
    grad_f = rlx.grad_with_loss(b.module, "f", wrt=["b"])
    x, w, bias = (rng.standard_normal(s).astype(np.float32)
                  for s in ((2, 3, 5, 5), (4, 3, 3, 3), (4,)))
    g = rng.standard_normal((2, 4, 5, 5)).astype(np.float32)
    _, db = rlx.interpret(b.module, x, w, bias, g, entry=grad_f.sym_name.data)
    np.testing.assert_allclose(db, g.sum(axis=(0, 2, 3)), rtol=1e-5)


@pytest.mark.parametrize("stride", [(1, 1), (2, 2)])
def test_avg_pool_gradient_kernel_has_the_dtype_of_x(stride):
    """Overlapping windows: a uniform f64 kernel; tiling ones: an f64 scale (no f32)."""
    b = rlx.Builder("f")
    b.ret(b.avg_pool2d(b.param("x", (1, 2, 4, 4), "f64"), kernel=(2, 2), stride=stride))
    text = str(rlx.grad_with_loss(b.module))
    if stride == (1, 1):
        assert "dense<2.500000e-01> : tensor<2x1x2x2xf64>" in text
    assert "f32" not in text


# ---------------------------------------------------------------- double backward


def test_conv2d_backward_input_gradients_reach_dy_and_w():
    b = rlx.Builder("f")
    dy, w = b.param("dy", (2, 6, 3, 7)), b.param("w", (6, 2, 3, 2))
    b.ret(b.emit("conv2d_backward_input", dy, w, out=[tensor((2, 4, 7, 6))],
                 stride=(2, 1), padding=(1, 1), dilation=(2, 1), groups=2))
    report = check_grads(b.module)
    assert [a.name for a in report.args] == ["dy", "w"]


def test_conv2d_backward_weight_gradients_reach_x_and_dy():
    b = rlx.Builder("f")
    x, dy = b.param("x", (2, 4, 7, 6)), b.param("dy", (2, 6, 3, 7))
    b.ret(b.emit("conv2d_backward_weight", x, dy, out=[tensor((6, 2, 3, 2))],
                 stride=(2, 1), padding=(1, 1), dilation=(2, 1), groups=2))
    report = check_grads(b.module)
    assert [a.name for a in report.args] == ["x", "dy"]


def test_gradient_penalty_through_conv_backward_ops():
    """loss = sum(d(sum(conv(x, w) * v))/dx ^ 2): w reaches the loss twice through
    conv2d_backward_input, x through conv2d and conv2d_backward_weight."""
    b = rlx.Builder("f")
    x, w = b.param("x", (1, 2, 5, 5)), b.param("w", (3, 2, 3, 3))
    cfg = dict(stride=(2, 2), padding=(1, 1))
    y = b.conv2d(x, w, **cfg)
    dx = b.emit("conv2d_backward_input", y, w, out=[x.type], **cfg)
    dw = b.emit("conv2d_backward_weight", x, y, out=[w.type], **cfg)
    b.ret(b.reduce_sum(dx * dx, axes=[0, 1, 2, 3]) + b.reduce_sum(dw * w, axes=[0, 1, 2, 3]))
    check_grads(b.module)


def test_second_derivative_of_max_pool_gathers_at_the_argmax():
    b = rlx.Builder("f")
    x, dy = b.input("x", (1, 2, 5, 4)), b.param("dy", (1, 2, 3, 2))
    b.ret(b.max_pool2d_backward(x, dy, kernel=(3, 2), stride=(2, 2), padding=(1, 0)))
    check_grads(b.module)


# ---------------------------------------------------------------- a small CNN vs torch


def build_cnn() -> rlx.Builder:
    """conv(+bias) -> relu -> max_pool -> reshape -> matmul + b -> cross entropy -> mean."""
    b = rlx.Builder("cnn")
    x = b.input("x", (4, 2, 8, 8))
    labels = b.input("labels", (4,), "i64")
    w1, b1 = b.param("w1", (3, 2, 3, 3)), b.param("b1", (3,))
    w2, b2 = b.param("w2", (3 * 4 * 4, 5)), b.param("b2", (5,))
    h = b.relu(b.conv2d(x, w1, b1, padding=(1, 1)))
    h = b.max_pool2d(h, kernel=(3, 3), stride=(2, 2), padding=(1, 1))
    logits = b.reshape(h, (4, 3 * 4 * 4)) @ w2 + b2
    b.ret(b.reduce_mean(b.softmax_cross_entropy(logits, labels), axes=[0]))
    return b


def torch_cnn_grads(x, labels, w1, b1, w2, b2) -> list[np.ndarray]:
    params = [torch.from_numpy(p).requires_grad_() for p in (w1, b1, w2, b2)]
    h = F.relu(F.conv2d(torch.from_numpy(x), params[0], params[1], padding=1))
    h = F.max_pool2d(h, 3, 2, 1)
    logits = h.reshape(4, -1) @ params[2] + params[3]
    F.cross_entropy(logits, torch.from_numpy(labels)).backward()
    return [p.grad.numpy() for p in params]


def test_small_cnn_matches_torch_autograd(rng):
    b = build_cnn()
    grad_f = rlx.grad_with_loss(b.module, "cnn")
    x = rng.standard_normal((4, 2, 8, 8)).astype(np.float32)
    labels = np.array([0, 3, 1, 4], np.int64)
    params = [rng.standard_normal(s).astype(np.float32) * 0.5
              for s in ((3, 2, 3, 3), (3,), (48, 5), (5,))]
    _, *grads = rlx.interpret(b.module, x, labels, *params, np.float32(1.0),
                              entry=grad_f.sym_name.data)
    for name, got, want in zip(["w1", "b1", "w2", "b2"], grads,
                               torch_cnn_grads(x, labels, *params), strict=True):
        assert got.dtype == np.float32 and got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max(),
                                   err_msg=name)


def test_small_cnn_gradients_are_exact_in_f64():
    check_grads(build_cnn().module, args={"labels": np.array([0, 3, 1, 4])})


@pytest.mark.parametrize("shape,kernel", [((4, 6, 7, 7), 7), ((2, 3, 8, 6), 2), ((2, 3, 6, 9), (3, 3))])
def test_avg_pool_over_tiling_windows_spreads_the_gradient(shape, kernel):
    """Windows that tile x (stride = kernel, no padding: global pools, 2x2 at stride 2)
    get ``g / (kh kw)`` broadcast over each window, no transposed depthwise conv (that was
    2.6-4x torch's time on a ResNet's global pool); values against torch."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape).astype(np.float32)
    loss = lambda x: (rlx.nn.avg_pool2d(x, kernel) ** 2).sum()  # noqa: E731
    text = rlx.to_text(rlx.grad(loss).lower(x).module)
    assert "conv2d_backward_input" not in text and "rlx.expand" in text
    tx = torch.tensor(x, requires_grad=True)
    (want,) = torch.autograd.grad((F.avg_pool2d(tx, kernel) ** 2).sum(), tx)
    np.testing.assert_allclose(rlx.grad(loss)(x), want.numpy(), rtol=1e-5, atol=1e-7)
