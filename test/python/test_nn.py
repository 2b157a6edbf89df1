"""Interpreter results of the nn family against PyTorch and numpy, in f32 and f64."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError

DTYPES = [np.float32, np.float64]


def name_of(dtype) -> str:
    return {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64"}[dtype]


def run(op: str, *arrays: np.ndarray, **attrs):
    """Interpret one ``rlx.<op>`` on ``arrays`` (fed as inputs), attributes as keywords."""
    b = rlx.Builder("f")
    inputs = [b.input(f"a{i}", a.shape, name_of(a.dtype.type)) for i, a in enumerate(arrays)]
    b.ret(b.emit(op, *inputs, **attrs))
    return rlx.interpret(b.module, *arrays)[0]


def tol(dtype) -> dict:
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-10}


def t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a)


# ---------------------------------------------------------------- softmax


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [-1, 0, 1, -2, 2])
@pytest.mark.parametrize("op,fn", [("softmax", torch.softmax), ("log_softmax", torch.log_softmax)])
def test_softmax_any_axis(op, fn, axis, dtype, rng):
    x = (3 * rng.standard_normal((3, 4, 5))).astype(dtype)
    got = run(op, x, axis=axis)
    assert got.dtype == dtype
    np.testing.assert_allclose(got, fn(t(x), axis).numpy(), **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_is_stable(dtype):
    x = np.array([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]], dtype)
    want = torch.softmax(t(x), -1).numpy()
    np.testing.assert_allclose(run("softmax", x), want, **tol(dtype))
    np.testing.assert_allclose(run("log_softmax", x), np.log(want), **tol(dtype))


# ---------------------------------------------------------------- norms


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(6,), (4, 6), (2, 3, 6)])
def test_layer_norm(shape, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype) * 2 + 1
    g, b = rng.standard_normal((2, shape[-1])).astype(dtype)
    got = run("layer_norm", x, g, b)
    want = F.layer_norm(t(x), (shape[-1],), t(g), t(b), eps=1e-5).numpy()
    np.testing.assert_allclose(got, want, **tol(dtype))
    got = run("layer_norm", x, g, b, axis=len(shape) - 1, eps=0.5)
    want = F.layer_norm(t(x), (shape[-1],), t(g), t(b), eps=0.5).numpy()
    np.testing.assert_allclose(got, want, **tol(dtype))


def rms_reference(x, g, b, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g + b


@pytest.mark.parametrize("dtype", DTYPES)
def test_rms_norm_with_and_without_beta(dtype, rng):
    x = rng.standard_normal((2, 3, 8)).astype(dtype)
    g, b = rng.standard_normal((2, 8)).astype(dtype)
    eps = float(np.float32(1e-6))  # the attribute is an f32
    np.testing.assert_allclose(run("rms_norm", x, g), rms_reference(x, g, 0, eps), **tol(dtype))
    np.testing.assert_allclose(run("rms_norm", x, g, b, eps=0.25),
                               rms_reference(x, g, b, 0.25), **tol(dtype))
    torch_rms = F.rms_norm(t(x), (8,), t(g), eps=1e-6).numpy()
    np.testing.assert_allclose(run("rms_norm", x, g), torch_rms, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 4), 3), ((2, 6, 5), 2), ((1, 4, 2, 2), 1),
                                          ((3, 4, 7), 4)])
def test_group_norm(shape, groups, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype) * 3 - 1
    g, b = rng.standard_normal((2, shape[1])).astype(dtype)
    got = run("group_norm", x, g, b, num_groups=groups)
    want = F.group_norm(t(x), groups, t(g), t(b), eps=1e-5).numpy()
    np.testing.assert_allclose(got, want, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 4, 3)])
def test_batch_norm_inference_channels_last(shape, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype)
    g, b, mean = rng.standard_normal((3, shape[-1])).astype(dtype)
    var = rng.uniform(0.5, 2.0, shape[-1]).astype(dtype)
    got = run("batch_norm_inference", x, g, b, mean, var, eps=1e-3)
    channels_first = t(np.moveaxis(x, -1, 1).copy())
    want = F.batch_norm(channels_first, t(mean), t(var), t(g), t(b), training=False, eps=1e-3)
    np.testing.assert_allclose(got, np.moveaxis(want.numpy(), 1, -1), **tol(dtype))


# ---------------------------------------------------------------- cross-entropy


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("label_dtype", [np.int64, np.int32, np.float32])
def test_softmax_cross_entropy(label_dtype, dtype, rng):
    logits = (4 * rng.standard_normal((6, 5))).astype(dtype)
    labels = rng.integers(0, 5, 6)
    got = run("softmax_cross_entropy", logits, labels.astype(label_dtype))
    assert got.dtype == dtype and got.shape == (6,)
    want = F.cross_entropy(t(logits), t(labels), reduction="none").numpy()
    np.testing.assert_allclose(got, want, **tol(dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_out_of_range_labels_give_logsumexp(dtype, rng):
    logits = rng.standard_normal((4, 3)).astype(dtype)
    lse = torch.logsumexp(t(logits), 1).numpy()
    got = run("softmax_cross_entropy", logits, np.array([-1, 3, 100, 1], np.int64))
    np.testing.assert_allclose(got[:3], lse[:3], **tol(dtype))
    np.testing.assert_allclose(got[3], lse[3] - logits[3, 1], **tol(dtype))
    f_labels = np.array([np.nan, 3.0, -2.0, 1.9], np.float32)  # 1.9 truncates to class 1
    got = run("softmax_cross_entropy", logits, f_labels)
    np.testing.assert_allclose(got[:3], lse[:3], **tol(dtype))
    np.testing.assert_allclose(got[3], lse[3] - logits[3, 1], **tol(dtype))


def test_cross_entropy_large_logits_keep_precision():
    logits = np.array([[1e4, 1e4 + 1, 1e4 - 1]], np.float32)
    want = F.cross_entropy(t(logits.astype(np.float64) - 1e4), t(np.array([0])),
                           reduction="none").numpy()
    np.testing.assert_allclose(run("softmax_cross_entropy", logits, np.array([0], np.int64)),
                               want, rtol=1e-6)


# ---------------------------------------------------------------- rope


def rope_reference(x, cos, sin, head_dim, n_rot):
    """Rotate-half RoPE with torch, heads split out of the last dim."""
    xt = t(x).reshape(*x.shape[:-1], -1, head_dim)
    half = n_rot // 2
    c = t(cos)[:, None, :half]
    s = t(sin)[:, None, :half]
    x1, x2, rest = xt[..., :half], xt[..., half:n_rot], xt[..., n_rot:]
    rotated = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s, rest], dim=-1)
    return rotated.reshape(x.shape).numpy()


def rope_tables(seq: int, head_dim: int, dtype):
    inv_freq = 1.0 / 10000 ** (np.arange(0, head_dim, 2) / head_dim)
    angles = np.arange(seq)[:, None] * inv_freq[None, :]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,head_dim,n_rot", [
    ((2, 5, 16), 8, None), ((5, 24), 8, None), ((2, 5, 16), 8, 4), ((3, 12), 6, 2),
    ((1, 4, 8), 8, 8),
])
def test_rope(shape, head_dim, n_rot, dtype, rng):
    x = rng.standard_normal(shape).astype(dtype)
    cos, sin = rope_tables(shape[-2], head_dim, dtype)
    attrs = {"head_dim": head_dim} | ({"n_rot": n_rot} if n_rot else {})
    got = run("rope", x, cos, sin, **attrs)
    want = rope_reference(x, cos, sin, head_dim, n_rot or head_dim)
    np.testing.assert_allclose(got, want, **tol(dtype))
    if n_rot and n_rot < head_dim:  # the unrotated tail of every head passes through exactly
        split = (*shape[:-1], -1, head_dim)
        np.testing.assert_array_equal(got.reshape(split)[..., n_rot:], x.reshape(split)[..., n_rot:])


def test_rope_matches_complex_rotation(rng):
    """Pairs (x[i], x[half+i]) rotate by the angle of (cos, sin), as complex numbers."""
    x = rng.standard_normal((3, 8))
    cos, sin = rope_tables(3, 8, np.float64)
    got = run("rope", x, cos, sin, head_dim=8)
    z = (x[:, :4] + 1j * x[:, 4:]) * (cos + 1j * sin)
    np.testing.assert_allclose(got, np.concatenate([z.real, z.imag], axis=1), atol=1e-12)


# ---------------------------------------------------------------- builder errors


@pytest.mark.parametrize("op,shapes,attrs,message", [
    ("layer_norm", [(4, 8), (8,), (8,)], {"axis": 0}, "normalises the last axis only"),
    ("rms_norm", [(4, 8), (4,)], {}, "gamma must be tensor<8xf32>"),
    ("group_norm", [(2, 6, 3), (6,), (6,)], {"num_groups": 4}, "must be positive and divide C = 6"),
    ("rope", [(3, 8), (3, 2), (3, 2)], {"head_dim": 4, "n_rot": 0}, "n_rot = 0 must be positive"),
    ("softmax", [(3,)], {"axis": 1}, "axis 1 is out of range for rank 1"),
])
def test_builder_reports_shape_errors(op, shapes, attrs, message):
    b = rlx.Builder("f")
    inputs = [b.input(f"a{i}", s) for i, s in enumerate(shapes)]
    with pytest.raises(RlxError, match=message):
        b.emit(op, *inputs, **attrs)
