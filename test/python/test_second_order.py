"""Second derivatives: grad of grad, and jvp of grad (Hessian-vector products)."""

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.dialects.elementwise import ACTIVATIONS
from rlx_mlir.testing import check_grads, check_jvp

SMOOTH = sorted(set(ACTIVATIONS) - {"relu", "abs", "round", "neg"})


def grad_module(kind, with_loss=True):
    b = rlx.Builder("f")
    x = b.param("x", (5,), "f64")
    b.ret(b.reduce_sum(getattr(b, kind)(x) * x, axes=[0]))
    m = b.module
    rlx.grad_with_loss(m, "f", with_loss=with_loss)
    return m


def positive(kind):
    return {"x": np.linspace(0.3, 1.7, 5)} if kind in ("log", "sqrt", "rsqrt") else None


@pytest.mark.parametrize("kind", SMOOTH)
def test_jvp_of_grad_matches_finite_differences(kind):
    check_jvp(grad_module(kind), "f_grad", wrt=["x"], args=positive(kind))


@pytest.mark.parametrize("kind", SMOOTH)
def test_grad_of_grad_matches_finite_differences(kind):
    """Differentiate the gradient function again: with ``grad-only`` its first result is
    the gradient itself, so this checks a Hessian-vector product through the VJPs of the
    backward ops."""
    m = grad_module(kind, with_loss=False)
    check_grads(m, "f_grad", wrt=["x"], args=positive(kind))


@pytest.mark.parametrize("kind", SMOOTH)
def test_second_derivative_jit_matches_interpreter(kind):
    b = rlx.Builder("f")
    x, dy = b.input("x", (7,), "f64"), b.input("dy", (7,), "f64")
    b.ret(b.activation_backward(x, dy, kind=kind, order=2))
    args = [np.linspace(0.2, 2.0, 7), np.linspace(-1, 1, 7)]
    got = rlx.compile(b.module)(*args)[0]
    np.testing.assert_allclose(got, rlx.interpret(b.module, *args)[0], rtol=1e-12, atol=1e-14)


def test_hessian_vector_product_of_mlp_matches_torch():
    rng = np.random.default_rng(0)
    b = rlx.Builder("loss")
    x = b.input("x", (8, 5))
    w1, w2 = b.param("w1", (5, 6)), b.param("w2", (6, 1))
    b.ret(b.reduce_mean(b.tanh(b.gelu(x @ w1) @ w2), axes=[0, 1]))
    m = b.module
    rlx.grad_with_loss(m, "loss")
    rlx.jvp(m, "loss_grad", wrt=["w1", "w2"])
    args = {"x": rng.standard_normal((8, 5)), "w1": rng.standard_normal((5, 6)) * 0.5,
            "w2": rng.standard_normal((6, 1)) * 0.5}
    v = {"w1": rng.standard_normal((5, 6)), "w2": rng.standard_normal((6, 1))}
    f32 = {k: a.astype(np.float32) for k, a in args.items()}
    outs = rlx.interpret(m, entry="loss_grad_jvp", **f32, d_output=np.float32(1),
                         tangent_w1=v["w1"].astype(np.float32),
                         tangent_w2=v["w2"].astype(np.float32))
    hvp = outs[-2:]

    def loss(w1, w2):
        xt = torch.tensor(args["x"])
        return torch.tanh(torch.nn.functional.gelu(xt @ w1) @ w2).mean()

    _, (h1, h2) = torch.func.jvp(
        torch.func.grad(loss, argnums=(0, 1)),
        (torch.tensor(args["w1"]), torch.tensor(args["w2"])),
        (torch.tensor(v["w1"]), torch.tensor(v["w2"])))
    np.testing.assert_allclose(hvp[0], h1.numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hvp[1], h2.numpy(), rtol=1e-4, atol=1e-5)


def test_grad_of_grad_through_cross_entropy():
    """Differentiate the gradient of a softmax cross-entropy loss again (f64)."""
    b = rlx.Builder("f")
    z, w = b.param("z", (4, 5)), b.param("w", (5, 5))
    labels = b.input("labels", (4,), "i32")
    b.ret(b.reduce_mean(b.softmax_cross_entropy(b.tanh(z @ w), labels), axes=[0]))
    m = b.module
    rlx.grad_with_loss(m, "f", with_loss=False)   # f_grad returns (dz, dw): dz is checked
    check_grads(m, "f_grad", wrt=["z", "w"], int_high=5)
