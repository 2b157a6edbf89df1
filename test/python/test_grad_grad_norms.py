"""Second derivatives through the norms: the VJP rules of the norm backward ops
(check_grads, f64), and a Hessian-vector product (reverse over reverse) of a small model
with layer_norm and rms_norm against torch double backward, interpreted and native."""

from collections.abc import Callable

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.testing import check_grads

EPS = 2.0**-10  # exact in the f32 ``eps`` attribute, so torch sees the same value


def op_module(shapes: dict[str, tuple[int, ...]], body: Callable[..., rlx.Tensor]) -> rlx.Builder:
    """``@f`` differentiable in every argument (f64), returning ``body(b, *args)``."""
    b = rlx.Builder("f")
    b.ret(body(b, *(b.param(n, s, "f64") for n, s in shapes.items())))
    return b


def affine(rng: np.random.Generator, size: int) -> np.ndarray:
    """A random scale away from zero (gamma) or positive variance."""
    return rng.uniform(0.5, 2.0, size)


X2, D = (3, 5), (5,)  # rows of the layer and RMS norms
X, GAMMA = (2, 4, 3), (4,)  # [N, C, L] for group norm
BN_X, BN_C = (2, 5, 3), (3,)  # channels last for batch norm

# name -> (shapes, body, affine arguments: name -> size)
CASES: dict[str, tuple[dict, Callable, dict[str, int]]] = {
    "layer_norm_backward_input": (
        {"x": X2, "gamma": D, "dy": X2},
        lambda b, x, g, dy: b.layer_norm_backward_input(x, g, dy, eps=EPS), {"gamma": 5}),
    "layer_norm_backward_gamma": (
        {"x": X2, "dy": X2}, lambda b, x, dy: b.layer_norm_backward_gamma(x, dy, eps=EPS), {}),
    "rms_norm_backward_input": (
        {"x": (2, 3, 4), "gamma": (4,), "dy": (2, 3, 4)},
        lambda b, x, g, dy: b.rms_norm_backward_input(x, g, dy, eps=EPS), {"gamma": 4}),
    "rms_norm_backward_gamma": (
        {"x": X2, "dy": X2}, lambda b, x, dy: b.rms_norm_backward_gamma(x, dy, eps=EPS), {}),
    "group_norm_backward_input": (
        {"x": X, "gamma": GAMMA, "dy": X},
        lambda b, x, g, dy: b.group_norm_backward_input(x, g, dy, num_groups=2, eps=EPS),
        {"gamma": 4}),
    "group_norm_backward_input_4d": (
        {"x": (2, 6, 2, 2), "gamma": (6,), "dy": (2, 6, 2, 2)},
        lambda b, x, g, dy: b.group_norm_backward_input(x, g, dy, num_groups=3, eps=EPS),
        {"gamma": 6}),
    "group_norm_backward_gamma": (
        {"x": X, "dy": X},
        lambda b, x, dy: b.group_norm_backward_gamma(x, dy, num_groups=2, eps=EPS), {}),
    "group_norm_backward_beta": (
        {"dy": X}, lambda b, dy: b.group_norm_backward_beta(dy), {}),
    "batch_norm_inference_backward_input": (
        {"gamma": BN_C, "var": BN_C, "dy": BN_X},
        lambda b, g, v, dy: b.batch_norm_inference_backward_input(g, v, dy, eps=EPS),
        {"gamma": 3, "var": 3}),
    "batch_norm_inference_backward_gamma": (
        {"x": BN_X, "mean": BN_C, "var": BN_C, "dy": BN_X},
        lambda b, x, m, v, dy: b.batch_norm_inference_backward_gamma(x, m, v, dy, eps=EPS),
        {"var": 3}),
    "batch_norm_inference_backward_beta": (
        {"dy": BN_X}, lambda b, dy: b.batch_norm_inference_backward_beta(dy), {}),
}


def case(name: str) -> tuple[rlx.Builder, dict[str, np.ndarray]]:
    shapes, body, sizes = CASES[name]
    rng = np.random.default_rng(len(name))
    return op_module(shapes, body), {n: affine(rng, s) for n, s in sizes.items()}


@pytest.mark.parametrize("name", CASES)
def test_vjp_of_norm_backward_op(name):
    """Every operand of every norm backward op against finite differences."""
    b, args = case(name)
    report = check_grads(b.module, args=args)
    assert [a.name for a in report.args] == list(CASES[name][0])


@pytest.mark.parametrize("name,wrt", [
    ("layer_norm_backward_input", None), ("rms_norm_backward_gamma", None),
    ("group_norm_backward_input", None), ("batch_norm_inference_backward_input", ["var", "dy"]),
])
def test_third_order_through_the_vjp_rules(name, wrt):
    """The ops the new rules emit are differentiable again: check the gradient (grad-only)
    of each backward op's VJP, i.e. a third derivative of the norm (``wrt``: what the first
    cotangent depends on)."""
    b, args = case(name)
    rlx.grad_with_loss(b.module, "f", with_loss=False)
    check_grads(b.module, "f_grad", wrt=wrt, args=args, max_elementwise=16)


# ---------------------------------------------------------------- Hessian-vector product

SIZES = {"w1": (6, 8), "g1": (8,), "b1": (8,), "w2": (8, 8), "g2": (8,)}
OFFSETS = np.cumsum([0] + [int(np.prod(s)) for s in SIZES.values()])
P = int(OFFSETS[-1])


def unpack(theta, take: Callable) -> dict:
    """The model's parameters as slices of one flat vector (one gradient, one HVP)."""
    return {n: take(theta, int(start), int(stop), shape) for (n, shape), start, stop
            in zip(SIZES.items(), OFFSETS[:-1], OFFSETS[1:], strict=True)}


def hvp_module():
    """``loss(x, theta, t) = sum(tanh(rms_norm(tanh(layer_norm(x w1)) w2)) * t)``, then its
    gradient (grad-only) and the gradient of that: ``(x, theta, t, seed, v) -> seed H v``."""
    b = rlx.Builder("loss")
    x, theta = b.input("x", (4, 6), "f64"), b.param("theta", (P,), "f64")
    t = b.input("t", (4, 8), "f64")
    p = unpack(theta, lambda v, i, j, shape: b.reshape(
        b.narrow(v, axis=0, start=i, length=j - i), shape))
    h = b.tanh(b.layer_norm(x @ p["w1"], p["g1"], p["b1"], eps=EPS))
    y = b.rms_norm(h @ p["w2"], p["g2"], eps=EPS)
    b.ret(b.reduce_sum(b.tanh(y) * t, axes=[0, 1]))
    m = b.module
    rlx.grad_with_loss(m, "loss", with_loss=False)  # seed: d_output
    rlx.grad_with_loss(m, "loss_grad", with_loss=False)  # its own seed, d_output_1, is v
    return m


def torch_hvp(x, theta, t, v) -> np.ndarray:
    x, t, v = (torch.tensor(a) for a in (x, t, v))
    theta = torch.tensor(theta, requires_grad=True)
    p = unpack(theta, lambda a, i, j, shape: a[i:j].reshape(shape))
    h = torch.tanh(torch.nn.functional.layer_norm(x @ p["w1"], (8,), p["g1"], p["b1"], EPS))
    z = h @ p["w2"]
    y = z * torch.rsqrt((z * z).mean(-1, keepdim=True) + EPS) * p["g2"]
    (grad,) = torch.autograd.grad((torch.tanh(y) * t).sum(), theta, create_graph=True)
    (hv,) = torch.autograd.grad(grad, theta, grad_outputs=v)
    return hv.numpy()


def hvp_args(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(P) * 0.5
    views = unpack(theta, lambda a, i, j, _shape: a[i:j])
    for n in ("g1", "g2"):
        views[n] += 1.0  # scales around 1
    return [rng.standard_normal((4, 6)), theta, rng.standard_normal((4, 8)),
            np.float64(1.0), rng.standard_normal(P)]


@pytest.fixture(scope="module")
def hvp():
    return hvp_module()


def test_hessian_vector_product_through_norms_matches_torch(hvp):
    args = hvp_args(0)
    (got,) = rlx.interpret(hvp, *args, entry="loss_grad_grad")
    want = torch_hvp(args[0], args[1], args[2], args[4])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-11)
    assert np.abs(want).max() > 1e-2  # a real second derivative, not zeros


def test_grad_of_grad_through_norms_matches_finite_differences(hvp):
    """The reverse-over-reverse function against central differences of the gradient."""
    check_grads(hvp, "loss_grad", wrt=["theta"], args=dict(zip(
        ["x", "theta", "t"], hvp_args(1)[:3], strict=True)), directions=3)


def test_hessian_vector_product_through_norms_native(hvp):
    args = hvp_args(2)
    (got,) = rlx.compile(hvp, entry="loss_grad_grad")(*args)
    np.testing.assert_allclose(got, torch_hvp(args[0], args[1], args[2], args[4]),
                               rtol=1e-9, atol=1e-11)
    (interpreted,) = rlx.interpret(hvp, *args, entry="loss_grad_grad")
    np.testing.assert_allclose(got, interpreted, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", ["group_norm_backward_input",
                                  "batch_norm_inference_backward_gamma"])
def test_vjp_of_norm_backward_op_native(name):
    """The group and batch norm rules' ops lower too: native gradient = interpreted."""
    b, given = case(name)
    grad = rlx.grad_with_loss(b.module, "f")
    rng = np.random.default_rng(3)
    args = [given.get(n, rng.standard_normal(s)) for n, s in CASES[name][0].items()]
    ct = rng.standard_normal(tuple(grad.function_type.inputs.data[-1].get_shape()))
    got = rlx.compile(b.module, entry="f_grad")(*args, ct)
    want = rlx.interpret(b.module, *args, ct, entry="f_grad")
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
