"""Differential tests against PyTorch: layer / rms / group norm, batch norm (training
statistics composed from reductions; rlx.batch_norm_inference, channel-LAST as SPEC
2.1.13), softmax / log_softmax on every axis, cross-entropy (ignore_index, label
smoothing composed, large f32 logits); forward and gradients, native and interpreter
(helpers in test_differential_torch.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_differential_torch import Diff, randn

import rlx_mlir as rlx

# ---------------------------------------------------------------- normalisations


def test_layer_norm_and_rms_norm():
    """Odd widths, rank 2-4, large means (the variance must not cancel), tiny variance
    against eps, RMS norm with and without beta."""
    rng = np.random.default_rng(50)
    x1, x2, x3 = randn(rng, 7, 33), randn(rng, 2, 3, 5) * 3 + 40.0, randn(rng, 2, 2, 3, 129)
    x4 = (randn(rng, 4, 6) * 1e-3).astype(np.float32)
    g1, b1, g2, b2, g3, b3, g4, b4 = (randn(rng, n) for n in (33, 33, 5, 5, 129, 129, 6, 6))
    args = [x1, x2, x3, x4, g1, b1, g2, b2, g3, b3, g4, b4]

    def rf(x1, x2, x3, x4, g1, b1, g2, b2, g3, b3, g4, b4):
        return (rlx.nn.layer_norm(x1, g1, b1), rlx.nn.layer_norm(x2, g2, b2, eps=1e-3),
                rlx.nn.layer_norm(x3, g3, b3), rlx.nn.layer_norm(x4, g4, b4, eps=1e-5),
                rlx.nn.rms_norm(x1, g1), rlx.nn.rms_norm(x2, g2, b2, eps=1e-5),
                rlx.nn.rms_norm(x3, g3, b3), rlx.nn.rms_norm(x4, g4, eps=1e-6))

    def tf(x1, x2, x3, x4, g1, b1, g2, b2, g3, b3, g4, b4):
        return (F.layer_norm(x1, (33,), g1, b1), F.layer_norm(x2, (5,), g2, b2, eps=1e-3),
                F.layer_norm(x3, (129,), g3, b3), F.layer_norm(x4, (6,), g4, b4, eps=1e-5),
                F.rms_norm(x1, (33,), g1, eps=1e-6), F.rms_norm(x2, (5,), g2, eps=1e-5) + b2,
                F.rms_norm(x3, (129,), g3, eps=1e-6) + b3, F.rms_norm(x4, (6,), g4, eps=1e-6))

    Diff(rf, tf, args, wrt=range(len(args)), grad_atol=5e-5).check()


def test_group_norm():
    rng = np.random.default_rng(51)
    shapes = [((2, 6, 5, 3), 3), ((1, 4, 7), 2), ((3, 8, 2, 2), 8), ((2, 5, 3, 3), 1)]
    args = []
    for shape, _ in shapes:
        args += [randn(rng, *shape) + 2.0, randn(rng, shape[1]), randn(rng, shape[1])]

    def rf(*xs):
        return tuple(x.builder.group_norm(x, g, b, num_groups=n, eps=1e-5)
                     for (_, n), x, g, b in zip(shapes, xs[::3], xs[1::3], xs[2::3], strict=True))

    def tf(*xs):
        return tuple(F.group_norm(x, n, g, b, eps=1e-5)
                     for (_, n), x, g, b in zip(shapes, xs[::3], xs[1::3], xs[2::3], strict=True))

    Diff(rf, tf, args, wrt=range(len(args)), grad_atol=5e-5).check()


def test_batch_norm_training_statistics_composed():
    """Training-mode batch norm is not an op (SPEC 2.1.13): composed from mean / var
    reductions over (N, H, W) of NCHW, biased variance, against F.batch_norm(training=True)."""
    rng = np.random.default_rng(52)
    x, g, b = randn(rng, 4, 3, 5, 7) * 2 + 1, randn(rng, 3), randn(rng, 3)

    def rf(x, g, b):
        mean = x.mean(axis=(0, 2, 3), keepdims=True)
        var = ((x - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
        return (x - mean) / rlx.nn.sqrt(var + 1e-5) * g.reshape(1, 3, 1, 1) + b.reshape(1, 3, 1, 1)

    def tf(x, g, b):
        return F.batch_norm(x, None, None, g, b, training=True, eps=1e-5)

    Diff(rf, tf, [x, g, b], wrt=(0, 1, 2), grad_atol=5e-5).check()


def test_batch_norm_inference_channel_last():
    """rlx.batch_norm_inference normalises the LAST axis (SPEC 2.1.13, not NCHW); its mean
    and var get no gradient (docs/comparison.md), so only x, gamma, beta are checked."""
    rng = np.random.default_rng(53)
    x, g, b = randn(rng, 2, 5, 4, 3), randn(rng, 3), randn(rng, 3)
    mean, var = randn(rng, 3), np.abs(randn(rng, 3)) + 0.1

    def rf(x, g, b, m, v):
        return x.builder.batch_norm_inference(x, g, b, m, v, eps=1e-3)

    def tf(x, g, b, m, v):
        y = F.batch_norm(x.permute(0, 3, 1, 2), m, v, g, b, training=False, eps=1e-3)
        return y.permute(0, 2, 3, 1)

    Diff(rf, tf, [x, g, b, mean, var], wrt=(0, 1, 2)).check()


# ---------------------------------------------------------------- softmax


def test_softmax_and_log_softmax_every_axis():
    rng = np.random.default_rng(54)
    x = randn(rng, 3, 4, 5) * 3
    big = randn(rng, 4, 6) * 3e4            # large f32 logits: must not overflow
    axes = [0, 1, 2, -1, -3]

    def rf(x, big):
        return (*(rlx.nn.softmax(x, axis=a) for a in axes),
                *(rlx.nn.log_softmax(x, axis=a) for a in axes),
                rlx.nn.softmax(big, axis=0), rlx.nn.log_softmax(big, axis=1))

    def tf(x, big):
        return (*(torch.softmax(x, a) for a in axes), *(torch.log_softmax(x, a) for a in axes),
                torch.softmax(big, 0), torch.log_softmax(big, 1))

    Diff(rf, tf, [x, big], wrt=(0, 1), names=[f"softmax {a}" for a in axes]
         + [f"log_softmax {a}" for a in axes] + ["softmax big", "log_softmax big"]).check()


def test_softmax_with_minus_infinity_entries():
    x = np.array([[0.0, -np.inf, 1.0], [-np.inf, 2.0, -np.inf]], np.float32)
    Diff(lambda t: rlx.nn.softmax(t, axis=-1), lambda t: torch.softmax(t, -1), [x], wrt=(0,)).check()
    Diff(lambda t: rlx.nn.softmax(t, axis=0), lambda t: torch.softmax(t, 0),
         [np.array([[0.0, -np.inf], [1.0, 3.0]], np.float32)], wrt=(0,)).check()


# ---------------------------------------------------------------- cross-entropy


@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
def test_cross_entropy_reductions_ignore_index(label_dtype):
    rng = np.random.default_rng(55)
    z = randn(rng, 9, 7)
    y = rng.integers(0, 7, 9).astype(label_dtype)
    y[[2, 5]] = -100
    y3 = y.copy()
    y3[y3 == -100] = 0

    def rf(z, y, y3):
        return (rlx.nn.cross_entropy(z, y), rlx.nn.cross_entropy(z, y, reduction="sum"),
                rlx.nn.cross_entropy(z, y, reduction="none"),
                rlx.nn.cross_entropy(z, y3, ignore_index=3),      # a real class ignored
                rlx.nn.cross_entropy(z, y3, ignore_index=None))

    def tf(z, y, y3):
        y, y3 = y.long(), y3.long()
        return (F.cross_entropy(z, y), F.cross_entropy(z, y, reduction="sum"),
                F.cross_entropy(z, y, reduction="none"), F.cross_entropy(z, y3, ignore_index=3),
                F.cross_entropy(z, y3))

    Diff(rf, tf, [z, y, y3], wrt=(0,)).check()


def test_cross_entropy_large_logits_and_label_smoothing():
    """f32 logits of size 1e4 (a naive logsumexp overflows); label smoothing composed
    from log_softmax as torch defines it."""
    rng = np.random.default_rng(56)
    z = randn(rng, 6, 11) * 1e4
    z2 = randn(rng, 8, 5) * 4
    y, y2 = rng.integers(0, 11, 6).astype(np.int32), rng.integers(0, 5, 8).astype(np.int32)
    y2[3] = -100
    eps = 0.1

    def rf(z, z2, y, y2):
        keep = (y2 != -100).astype("f32")
        smooth = -(rlx.nn.log_softmax(z2, axis=-1).mean(axis=1)) * keep
        ce = rlx.nn.cross_entropy(z2, y2, reduction="none")
        smoothed = ((1 - eps) * ce + eps * smooth).sum() / keep.sum()
        return rlx.nn.cross_entropy(z, y, reduction="none"), smoothed

    def tf(z, z2, y, y2):
        return (F.cross_entropy(z, y.long(), reduction="none"),
                F.cross_entropy(z2, y2.long(), label_smoothing=eps))

    Diff(rf, tf, [z, z2, y, y2], wrt=(0, 1)).check()


def test_cross_entropy_every_row_ignored_is_zero_not_nan():
    """Divergence from torch (noted): with every row ignored, torch's ``"mean"`` is
    0/0 = NaN; rlx divides by max(count, 1) and returns 0 with a zero gradient."""
    z = np.ones((3, 4), np.float32)
    y = np.full(3, -100, np.int32)
    loss, g = rlx.value_and_grad(lambda z, y: rlx.nn.cross_entropy(z, y))(z, y)
    assert loss == 0.0 and not g.any()
    assert torch.isnan(F.cross_entropy(torch.tensor(z), torch.tensor(y).long()))


def test_invalid_nn_arguments_are_rlx_errors():
    x = np.ones((2, 6), np.float32)
    cases = [
        lambda x: rlx.nn.layer_norm(x, x[0, :5], x[0, :5]),              # gamma width
        lambda x: rlx.nn.softmax(x, axis=2),                             # axis out of range
        lambda x: rlx.nn.cross_entropy(x, x),                            # float labels [2, 6]
        lambda x: x.reshape(2, 1, 6).builder.group_norm(x.reshape(2, 6, 1), x[0], x[0],
                                                        num_groups=4),   # 4 does not divide 6
        lambda x: rlx.nn.cross_entropy(x, x[:, 0], reduction="avg"),
    ]
    for fn in cases:
        with pytest.raises(rlx.RlxError):
            rlx.jit(fn)(x)
