"""rlx.nn and Tensor forms a PyTorch / numpy user writes: ignore_index, negative ids,
int strides, numpy dtype names, 1-d matmul, float-width promotion."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx

RNG = np.random.default_rng(5)
LOGITS = RNG.standard_normal((5, 3))
LABELS = np.array([0, -100, 2, 1, -100])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_ignores_label_minus_100_like_torch(reduction):
    got = rlx.jit(lambda z, y: rlx.nn.cross_entropy(z, y, reduction=reduction))(LOGITS, LABELS)
    want = torch.nn.functional.cross_entropy(torch.tensor(LOGITS), torch.tensor(LABELS),
                                             reduction=reduction)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-14)


def test_cross_entropy_gradient_skips_ignored_rows_like_torch():
    got = rlx.grad(lambda z, y: rlx.nn.cross_entropy(z, y))(LOGITS, LABELS)
    z = torch.tensor(LOGITS, requires_grad=True)
    torch.nn.functional.cross_entropy(z, torch.tensor(LABELS)).backward()
    np.testing.assert_allclose(got, z.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert not got[1].any() and not got[4].any()


def test_cross_entropy_without_ignore_index_counts_every_row():
    labels = np.array([0, 1, 2, 1, 0])
    got = rlx.jit(lambda z, y: rlx.nn.cross_entropy(z, y, ignore_index=None))(LOGITS, labels)
    want = torch.nn.functional.cross_entropy(torch.tensor(LOGITS), torch.tensor(labels))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("lookup", [lambda t, i: rlx.nn.embedding(t, i), lambda t, i: t[i]])
def test_negative_traced_ids_count_from_the_end(lookup):
    table = RNG.standard_normal((4, 3))
    ids = np.array([1, -1, 3, -4])
    np.testing.assert_array_equal(rlx.jit(lookup)(table, ids), table[ids])


def test_a_python_float_argument_works_with_f64_tensors():
    got = rlx.jit(lambda x, lr: x - lr * x)(np.ones(3), 0.1)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, np.full(3, 0.9))


def test_f32_and_f64_tensors_promote_to_f64():
    a, b = np.ones(3, np.float32) / 3, np.ones(3) / 3
    got = rlx.jit(lambda x, y: x * y)(a, b)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, a.astype(np.float64) * b, rtol=1e-15)


@pytest.mark.parametrize("a_shape,b_shape", [((3, 4), (4,)), ((3,), (3, 4)), ((4,), (4,)),
                                             ((2, 3, 4), (4,)), ((3,), (2, 3, 4))])
def test_matmul_with_a_vector_follows_numpy(a_shape, b_shape):
    a, b = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
    got = rlx.jit(lambda x, y: x @ y)(a, b)
    assert got.shape == (a @ b).shape
    np.testing.assert_allclose(got, a @ b, rtol=1e-12)


@pytest.mark.parametrize("dtype,want", [(np.float32, np.float32), ("int32", np.int32),
                                        (np.dtype(np.float64), np.float64), ("f32", np.float32)])
def test_astype_takes_numpy_dtypes(dtype, want):
    assert rlx.jit(lambda t: t.astype(dtype))(np.ones(2)).dtype == want


def test_astype_of_an_unsupported_dtype_is_an_rlx_error():
    with pytest.raises(rlx.RlxError, match=r"unsupported dtype 'uint8'"):
        rlx.jit(lambda t: t.astype("uint8"))(np.ones(2))


def test_conv_and_pool_take_int_stride_padding_and_kernel_like_torch():
    x, w = RNG.standard_normal((2, 3, 8, 8)), RNG.standard_normal((4, 3, 3, 3))
    conv, pooled, avg = rlx.jit(lambda a, k: (rlx.nn.conv2d(a, k, stride=2, padding=1),
                                              rlx.nn.max_pool2d(a, 2),
                                              rlx.nn.avg_pool2d(a, 2)))(x, w)
    tx = torch.tensor(x)
    np.testing.assert_allclose(conv, torch.nn.functional.conv2d(
        tx, torch.tensor(w), stride=2, padding=1).numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(pooled, torch.nn.functional.max_pool2d(tx, 2).numpy())
    np.testing.assert_allclose(avg, torch.nn.functional.avg_pool2d(tx, 2).numpy(), rtol=1e-14)


def test_cross_entropy_with_numpy_labels_closed_over_like_a_training_loop():
    """Labels captured from the enclosing scope (a numpy batch), ignore_index on."""
    w = RNG.standard_normal((3, 3))
    got = rlx.grad(lambda w: rlx.nn.cross_entropy(LOGITS @ w, LABELS))(w)
    tw = torch.tensor(w, requires_grad=True)
    torch.nn.functional.cross_entropy(torch.tensor(LOGITS) @ tw, torch.tensor(LABELS)).backward()
    np.testing.assert_allclose(got, tw.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("labels", [np.array([1.7, 0.2, 0.0, 1.0, 2.0], np.float32),
                                    np.array([1.0, 0.0, 0.0, 1.0, 2.0])])
def test_float_labels_are_an_error_not_truncated_classes(labels):
    with pytest.raises(rlx.RlxError, match=r"test_nn_torch_parity.py:\d+:\d+: error: "
                                           r"cross_entropy: labels must be integer"):
        rlx.jit(lambda z, y: rlx.nn.cross_entropy(z, y, reduction="none"))(LOGITS, labels)
    with pytest.raises(rlx.RlxError, match="labels must be integer"):
        rlx.jit(lambda z: rlx.nn.cross_entropy(z, labels))(LOGITS)


def test_where_takes_a_numpy_condition():
    keep = np.array([True, False, True])
    got = rlx.jit(lambda a: rlx.nn.where(keep, a, 0.0))(np.arange(3.0) + 1)
    np.testing.assert_array_equal(got, [1.0, 0.0, 3.0])
    # no traced operand: the numpy result (f32 from Python floats), then lifted into a's
    got = rlx.jit(lambda a: rlx.nn.where(keep, 1.0, 0.0) + a)(np.ones(3))
    np.testing.assert_array_equal(got, [2.0, 1.0, 2.0])
    assert got.dtype == np.float64


def _conv_data() -> np.ndarray:
    return np.random.default_rng(0).standard_normal((2, 4, 6, 6)).astype(np.float32)


def test_closed_over_numpy_data_with_traced_parameters():
    """Data closed over as numpy next to traced weights (the usual training loop): conv2d
    'same' with an even kernel (x padded first), group_norm and batch_norm, pad of numpy
    data inside a trace; gradients as torch's."""
    x, g = _conv_data(), np.linspace(0.5, 1.5, 4).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 4, 2, 2)).astype(np.float32)
    tx, tw, tg = torch.tensor(x), torch.tensor(w, requires_grad=True), torch.tensor(
        g, requires_grad=True)
    gw = rlx.grad(lambda w: (rlx.nn.conv2d(x, w, padding="same") ** 2).sum())(w)
    (F.conv2d(F.pad(tx, (0, 1, 0, 1)), tw) ** 2).sum().backward()
    np.testing.assert_allclose(gw, tw.grad.numpy(), rtol=1e-4, atol=1e-3)
    gg = rlx.grad(lambda g: (rlx.nn.group_norm(x, 2, g) ** 2 * np.arange(4.0).reshape(
        1, 4, 1, 1)).sum())(g)
    (F.group_norm(tx, 2, tg) ** 2 * torch.arange(4.0).reshape(1, 4, 1, 1)).sum().backward()
    np.testing.assert_allclose(gg, tg.grad.numpy(), rtol=1e-4, atol=1e-4)
    tg.grad = None
    gb = rlx.grad(lambda g: (rlx.nn.batch_norm(x, weight=g) * np.arange(4.0).reshape(
        1, 4, 1, 1)).sum() + (rlx.nn.batch_norm(x, weight=g) ** 2).sum())(g)
    y = F.batch_norm(tx, None, None, tg, training=True)
    ((y * torch.arange(4.0).reshape(1, 4, 1, 1)).sum() + (y ** 2).sum()).backward()
    np.testing.assert_allclose(gb, tg.grad.numpy(), rtol=1e-4, atol=1e-4)
    padded = rlx.jit(lambda s: rlx.nn.pad(x, 1) * s)(np.float32(2))
    np.testing.assert_array_equal(padded, np.pad(x, 1) * 2)


def test_conv_padding_pairs_and_mixed_float_widths():
    """JAX's per-side padding pairs ``((top, bottom), (left, right))``; f32 with f64
    operands compute in f64 (as ``x @ w``), for conv2d and layer_norm."""
    x = _conv_data()
    w = np.random.default_rng(2).standard_normal((3, 4, 3, 2)).astype(np.float32)
    y = rlx.jit(lambda x, w: rlx.nn.conv2d(x, w, padding=((1, 2), (0, 1))))(x, w)
    want = F.conv2d(F.pad(torch.tensor(x), (0, 1, 1, 2)), torch.tensor(w)).numpy()
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    y64 = rlx.jit(lambda x, w: rlx.nn.conv2d(x, w))(x, w.astype(np.float64))
    assert y64.dtype == np.float64
    np.testing.assert_allclose(y64, F.conv2d(torch.tensor(x, dtype=torch.float64),
                                             torch.tensor(w, dtype=torch.float64)).numpy(),
                               rtol=1e-10, atol=1e-10)
    ln = rlx.jit(lambda x, g: rlx.nn.layer_norm(x, g, g))(x.astype(np.float64),
                                                          np.ones(6, np.float32))
    assert ln.dtype == np.float64


@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3, 3, 2)])
def test_group_norm_of_any_rank(shape):
    """``[N, C]`` and ``[N, C, D, H, W]`` as torch's ``F.group_norm`` (normalised over
    each group's channels and every trailing axis)."""
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    y = rlx.jit(lambda a: rlx.nn.group_norm(a, 2))(x)
    np.testing.assert_allclose(y, F.group_norm(torch.tensor(x), 2).numpy(), rtol=1e-5,
                               atol=1e-5)


def test_conv_pool_norm_argument_errors():
    """Float strides and kernels, 'same' pooling, wrong ranks, half-given running
    statistics, momentum=None, wrong statistic lengths and fractional pad widths are
    located errors naming the argument (torch and numpy reject them too)."""
    x, g = _conv_data(), np.ones(4, np.float32)
    w = np.ones((4, 4, 2, 2), np.float32)
    for call, message in (
            (lambda: rlx.nn.conv2d(x, w, stride=2.0), "conv2d: stride must be an int or a pair"),
            (lambda: rlx.nn.max_pool2d(x, 2.0), "max_pool2d: kernel must be an int or a pair"),
            (lambda: rlx.nn.max_pool2d(x, 3, 1, "same"), "max_pool2d: padding must be an int"),
            (lambda: rlx.nn.avg_pool2d(x, 2, None, (1, 1, 1)), "avg_pool2d: padding must be"),
            (lambda: rlx.nn.conv2d(x[0], w, padding="same"),
             r"conv2d: x must be NCHW \(rank 4\), got shape \[4, 6, 6\]"),
            (lambda: rlx.nn.conv2d(x, w[0]), r"conv2d: w must be OIHW \(rank 4\)"),
            (lambda: rlx.jit(lambda x, m: rlx.nn.batch_norm(x, m))(x, g),
             "running_mean and running_var must both be given or both be None"),
            (lambda: rlx.nn.batch_norm(x, g, g, momentum=None), "momentum must be a number"),
            (lambda: rlx.nn.batch_norm(x, g[:3], g[:3]),
             r"running_mean must have shape \[4\] \(one per channel\), got \[3\]"),
            (lambda: rlx.nn.pad(x, 1.5), "pad_width must be integers")):
        with pytest.raises(rlx.RlxError, match=message):
            call()
