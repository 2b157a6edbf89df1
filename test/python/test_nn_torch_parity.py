"""rlx.nn and Tensor forms a PyTorch / numpy user writes: ignore_index, negative ids,
int strides, numpy dtype names, 1-d matmul, float-width promotion."""

from __future__ import annotations

import numpy as np
import pytest
import torch

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
