"""Autodiff of the nn family: the backward ops' interpreters against torch.autograd
(f32 and f64) and every VJP rule against finite differences (check_grads, f64)."""

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx
from rlx_mlir.testing import check_grads
from rlx_mlir.transforms.autodiff import grad_with_loss

DTYPES = [np.float32, np.float64]
NAMES = {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64"}
NAMES_INV = {v: k for k, v in NAMES.items()}


def t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(a)


def run(op: str, *arrays: np.ndarray, **attrs) -> np.ndarray:
    """Interpret one ``rlx.<op>`` on ``arrays`` (fed as inputs), attributes as keywords."""
    b = rlx.Builder("f")
    inputs = [b.input(f"a{i}", a.shape, NAMES[a.dtype.type]) for i, a in enumerate(arrays)]
    b.ret(b.emit(op, *inputs, **attrs))
    return rlx.interpret(b.module, *arrays)[0]


def tol(dtype) -> dict:
    return {"rtol": 2e-4, "atol": 2e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-11}


def f32(value: float) -> float:
    """``value`` rounded as the f32 ``eps`` attribute holds it."""
    return float(np.float32(value))


def torch_grads(fn: Callable[..., torch.Tensor], arrays: list[np.ndarray], dy: np.ndarray,
                wrt: list[int]) -> list[np.ndarray]:
    """Gradients of ``<dy, fn(*arrays)>`` with respect to ``arrays[i]`` for i in ``wrt``."""
    tensors = [torch.tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]
    fn(*tensors).backward(torch.from_numpy(dy))
    return [tensors[i].grad.numpy() for i in wrt]


def assert_all_close(got: list[np.ndarray], want: list[np.ndarray], dtype) -> None:
    for g, w in zip(got, want, strict=True):
        assert g.dtype == dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, **tol(dtype))


# ---------------------------------------------------------------- backward ops vs torch


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,eps", [((2, 6), 1e-5), ((2, 3, 5), 0.5), ((4, 2), 1e-3)])
def test_layer_norm_backward_ops(shape, eps, dtype, rng):
    x = (2 * rng.standard_normal(shape) + 1).astype(dtype)
    g, b = rng.standard_normal((2, shape[-1])).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    want = torch_grads(lambda x, g, b: F.layer_norm(x, (shape[-1],), g, b, eps=f32(eps)),
                       [x, g, b], dy, [0, 1])
    got = [run("layer_norm_backward_input", x, g, dy, eps=eps),
           run("layer_norm_backward_gamma", x, dy, eps=eps)]
    assert_all_close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,eps", [((3, 8), 1e-6), ((2, 3, 4), 0.25)])
def test_rms_norm_backward_ops(shape, eps, dtype, rng):
    x, dy = rng.standard_normal((2, *shape)).astype(dtype)
    g = rng.standard_normal(shape[-1]).astype(dtype)
    want = torch_grads(lambda x, g: F.rms_norm(x, (shape[-1],), g, eps=f32(eps)), [x, g], dy,
                       [0, 1])
    got = [run("rms_norm_backward_input", x, g, dy, eps=eps),
           run("rms_norm_backward_gamma", x, dy, eps=eps)]
    assert_all_close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 4), 3), ((2, 6, 5), 2), ((1, 4, 2, 2), 1),
                                          ((3, 4, 7), 4)])
def test_group_norm_backward_ops(shape, groups, dtype, rng):
    x = (3 * rng.standard_normal(shape) - 1).astype(dtype)
    g, b = rng.standard_normal((2, shape[1])).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    want = torch_grads(lambda x, g, b: F.group_norm(x, groups, g, b, eps=f32(1e-5)),
                       [x, g, b], dy, [0, 1, 2])
    got = [run("group_norm_backward_input", x, g, dy, num_groups=groups),
           run("group_norm_backward_gamma", x, dy, num_groups=groups),
           run("group_norm_backward_beta", dy)]
    assert_all_close(got, want, dtype)


def channels_last_batch_norm(x, g, b, mean, var, eps):
    """torch's batch norm (channel axis 1) on a channels-last x."""
    y = F.batch_norm(x.movedim(-1, 1), mean, var, g, b, training=False, eps=eps)
    return y.movedim(1, -1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 4, 3), (3,)])
def test_batch_norm_inference_backward_ops(shape, dtype, rng):
    x, dy = rng.standard_normal((2, *shape)).astype(dtype)
    g, b, mean = rng.standard_normal((3, shape[-1])).astype(dtype)
    var = rng.uniform(0.5, 2.0, shape[-1]).astype(dtype)

    def fn(x, g, b):
        return channels_last_batch_norm(x, g, b, t(mean), t(var), f32(1e-3))

    want = torch_grads(fn, [x, g, b], dy, [0, 1, 2]) if len(shape) > 1 else None
    got = [run("batch_norm_inference_backward_input", g, var, dy, eps=1e-3),
           run("batch_norm_inference_backward_gamma", x, mean, var, dy, eps=1e-3),
           run("batch_norm_inference_backward_beta", dy)]
    if want is None:  # torch needs a batch axis: compare a rank-1 x with the closed form
        inv = 1 / np.sqrt(var + f32(1e-3))
        want = [dy * g * inv, dy * (x - mean) * inv, dy]
    assert_all_close(got, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("label_dtype", [np.int64, np.int32, np.float32])
def test_softmax_cross_entropy_backward(label_dtype, dtype, rng):
    logits = (3 * rng.standard_normal((6, 5))).astype(dtype)
    labels = rng.integers(0, 5, 6)
    d_loss = rng.standard_normal(6).astype(dtype)
    (want,) = torch_grads(lambda z: F.cross_entropy(z, t(labels), reduction="none"),
                          [logits], d_loss, [0])
    got = run("softmax_cross_entropy_backward", logits, labels.astype(label_dtype), d_loss)
    assert_all_close([got], [want], dtype)


def one_hot_cross_entropy(z: torch.Tensor, one_hot: np.ndarray) -> torch.Tensor:
    return torch.logsumexp(z, 1) - (z * t(one_hot)).sum(1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("labels", [
    np.array([-1, 3, 100, 1], np.int64),
    np.array([np.nan, 3.0, -2.0, 1.9], np.float32),  # 1.9 truncates to class 1
])
def test_cross_entropy_backward_out_of_range_labels(labels, dtype, rng):
    """A label outside [0, C) has a zero one-hot row: its gradient is softmax * d_loss."""
    logits = rng.standard_normal((4, 3)).astype(dtype)
    d_loss = rng.standard_normal(4).astype(dtype)
    one_hot = np.zeros((4, 3), dtype)
    one_hot[3, 1] = 1
    (want,) = torch_grads(lambda z: one_hot_cross_entropy(z, one_hot), [logits], d_loss, [0])
    got = run("softmax_cross_entropy_backward", logits, labels, d_loss)
    assert_all_close([got], [want], dtype)
    softmax = torch.softmax(t(logits), 1).numpy()
    np.testing.assert_allclose(got[:3], softmax[:3] * d_loss[:3, None], **tol(dtype))


def torch_rope(x: torch.Tensor, cos: np.ndarray, sin: np.ndarray, head_dim: int,
               n_rot: int) -> torch.Tensor:
    """Rotate-half RoPE in torch, heads split out of the last dim."""
    heads = x.reshape(*x.shape[:-1], -1, head_dim)
    half = n_rot // 2
    c, s = t(cos)[:, None, :half], t(sin)[:, None, :half]
    x1, x2, rest = heads[..., :half], heads[..., half:n_rot], heads[..., n_rot:]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s, rest], dim=-1).reshape(x.shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,head_dim,n_rot", [
    ((2, 5, 16), 8, 8), ((5, 24), 8, 8), ((2, 5, 16), 8, 4), ((3, 12), 6, 2),
])
def test_rope_backward(shape, head_dim, n_rot, dtype, rng):
    dy = rng.standard_normal(shape).astype(dtype)
    x = rng.standard_normal(shape).astype(dtype)
    cos, sin = rng.standard_normal((2, shape[-2], head_dim // 2)).astype(dtype)
    (want,) = torch_grads(lambda x: torch_rope(x, cos, sin, head_dim, n_rot), [x], dy, [0])
    got = run("rope_backward", dy, cos, sin, head_dim=head_dim, n_rot=n_rot)
    assert_all_close([got], [want], dtype)
    same = run("rope", dy, cos, -sin, head_dim=head_dim, n_rot=n_rot)  # SPEC 3.4
    np.testing.assert_array_equal(got, same)


# ---------------------------------------------------------------- VJP rules: check_grads (f64)


def build(name: str, params: dict[str, tuple], inputs: dict[str, tuple],
          body: Callable[..., rlx.Tensor]) -> rlx.Builder:
    """A one-function module: ``params`` (differentiated) then ``inputs`` (name -> shape, or
    (shape, dtype)); ``body(b, *args)`` gives the result."""
    b = rlx.Builder(name)
    args = [b.param(n, s) for n, s in params.items()]
    args += [b.input(n, *s) if isinstance(s[0], tuple) else b.input(n, s)
             for n, s in inputs.items()]
    b.ret(body(b, *args))
    return b


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 0, 1, -2, 2])
def test_grad_softmax_any_axis(op, axis):
    b = build("f", {"x": (2, 3, 4)}, {}, lambda b, x: b.emit(op, x, axis=axis))
    check_grads(b.module, args={"x": 3 * np.random.default_rng(1).standard_normal((2, 3, 4))})


def test_grad_softmax_under_a_loss():
    """softmax feeding a weighted sum: a cotangent that is not a plain random array."""
    b = build("f", {"x": (3, 5)}, {"w": (5,)},
              lambda b, x, w: b.reduce_sum(b.log(b.softmax(x, axis=0)) * w, axes=[0, 1]))
    check_grads(b.module)


@pytest.mark.parametrize("shape", [(2,), (3, 2), (2, 3, 6)])
def test_grad_layer_norm(shape):
    d = shape[-1]
    b = build("f", {"x": shape, "g": (d,), "beta": (d,)}, {},
              lambda b, x, g, beta: b.layer_norm(x, g, beta, eps=1e-3))
    report = check_grads(b.module)
    assert [a.name for a in report.args] == ["x", "g", "beta"]


@pytest.mark.parametrize("with_beta", [False, True])
def test_grad_rms_norm(with_beta):
    params = {"x": (3, 5), "g": (5,)} | ({"beta": (5,)} if with_beta else {})
    b = build("f", params, {}, lambda b, *args: b.rms_norm(*args, eps=1e-2))
    report = check_grads(b.module)
    assert len(report.args) == len(params)


@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((2, 6, 2, 2), 3), ((1, 4, 3, 2), 1),
                                          ((2, 4, 3), 4)])
def test_grad_group_norm(shape, groups):
    c = shape[1]
    b = build("f", {"x": shape, "g": (c,), "beta": (c,)}, {},
              lambda b, x, g, beta: b.group_norm(x, g, beta, num_groups=groups, eps=1e-3))
    check_grads(b.module)


def test_grad_batch_norm_statistics_get_nothing():
    def model():
        return build("f", {"x": (2, 4, 3), "g": (3,), "beta": (3,)},
                     {"mean": (3,), "var": (3,)},
                     lambda b, x, g, beta, m, v: b.batch_norm_inference(x, g, beta, m, v))

    b = model()
    var = np.random.default_rng(2).uniform(0.5, 2.0, 3)
    check_grads(b.module, args={"var": var})
    grad = grad_with_loss(b.module, "f", wrt=["x", "g", "beta"])
    assert "rlx.batch_norm_inference_backward_input" in str(grad)
    with pytest.raises(rlx.RlxError, match="no gradient reaches 'mean'"):
        grad_with_loss(model().module, "f", wrt=["mean"])


@pytest.mark.parametrize("label_dtype", ["i32", "i64"])
@pytest.mark.parametrize("labels", [None, np.array([0, 2, -1, 7])])
def test_grad_softmax_cross_entropy(label_dtype, labels):
    b = build("f", {"z": (4, 3)}, {"t": ((4,), label_dtype)},
              lambda b, z, t: b.reduce_mean(b.softmax_cross_entropy(z, t), axes=[0]))
    args = {} if labels is None else {"t": labels.astype(NAMES_INV[label_dtype])}
    check_grads(b.module, args=args, int_high=3)


def test_grad_cross_entropy_f32_labels_vs_torch(rng):
    """f32-encoded labels (check_grads promotes every f32 tensor, so compare with torch)."""
    b = build("f", {"z": (5, 4)}, {"t": ((5,), "f32")},
              lambda b, z, t: b.softmax_cross_entropy(z, t))
    grad = grad_with_loss(b.module, "f")
    z = rng.standard_normal((5, 4)).astype(np.float32)
    labels = np.array([0.0, 3.7, 1.0, 2.2, 9.0], np.float32)  # 9 is out of range
    d_loss = rng.standard_normal(5).astype(np.float32)
    loss, dz = rlx.interpret(b.module, z, labels, d_loss, entry=grad.sym_name.data)
    one_hot = np.eye(4, dtype=np.float32)[[0, 3, 1, 2, 0]] * np.array([1, 1, 1, 1, 0])[:, None]
    (want,) = torch_grads(lambda z: one_hot_cross_entropy(z, one_hot.astype(np.float32)), [z],
                          d_loss, [0])
    np.testing.assert_allclose(dz, want, **tol(np.float32))


@pytest.mark.parametrize("shape,head_dim,n_rot", [((2, 3, 16), 8, 4), ((3, 12), 6, 2),
                                                  ((3, 8), 4, 4)])
def test_grad_rope(shape, head_dim, n_rot):
    tables = (shape[-2], head_dim // 2)
    b = build("f", {"x": shape}, {"c": tables, "s": tables},
              lambda b, x, c, s: b.rope(x, c, s, head_dim=head_dim, n_rot=n_rot))
    check_grads(b.module, max_elementwise=100)


def test_grad_rope_backward_second_order():
    b = build("f", {"dy": (2, 3, 8)}, {"c": (3, 2), "s": (3, 2)},
              lambda b, dy, c, s: b.rope_backward(dy, c, s, head_dim=4))
    check_grads(b.module, max_elementwise=100)


def test_grad_composed_block():
    """layer_norm -> rope -> rms_norm -> cross-entropy, every parameter at once."""
    def body(b, x, g1, b1, g2, labels, c, s):
        h = b.layer_norm(x, g1, b1)
        h = b.rope(h, c, s, head_dim=4, n_rot=2)
        logits = b.rms_norm(h, g2)
        return b.reduce_sum(b.softmax_cross_entropy(logits, labels), axes=[0])

    b = build("block", {"x": (3, 8), "g1": (8,), "b1": (8,), "g2": (8,)},
              {"labels": ((3,), "i64"), "c": (3, 2), "s": (3, 2)}, body)
    report = check_grads(b.module, int_high=8)
    assert [a.name for a in report.args] == ["x", "g1", "b1", "g2"]
