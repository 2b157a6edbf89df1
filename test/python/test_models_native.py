"""Whole models compiled natively: gradient functions vs PyTorch, and the transformer
block's per-example gradients (vmap of grad) and Hessian-vector products (jvp of grad)."""

import numpy as np
import torch
from test_models_grad import (
    assert_block_grads_match,
    assert_mlp_grads_match,
    random_args,
    rlx_grads,
    torch_block,
    torch_params,
)

import rlx_mlir as rlx
from rlx_mlir.models import mlp_loss, transformer_block_loss


def test_mlp_gradient_natively_matches_torch():
    rng = np.random.default_rng(0)
    m = mlp_loss(batch=32, sizes=(20, 24, 24, 5))
    args, names = random_args(m, "mlp_loss", rng, int_high=5)
    loss, grads = rlx_grads(m, "mlp_loss", args, native=True)
    assert_mlp_grads_match(loss, grads, args, names)


def test_transformer_block_gradient_natively_matches_torch():
    rng = np.random.default_rng(1)
    m = transformer_block_loss(batch=2, seq=8, d_model=16, heads=2)
    args, names = random_args(m, "block_loss", rng)
    loss, grads = rlx_grads(m, "block_loss", args, native=True)
    assert_block_grads_match(loss, grads, args, names)


def block_module():
    m = transformer_block_loss(batch=1, seq=6, d_model=16, heads=2)
    rlx.grad_with_loss(m, "block_loss")
    return m


def test_transformer_block_per_example_gradients_vmap_of_grad_native():
    rng = np.random.default_rng(2)
    m = block_module()
    rlx.vmap(m, "block_loss_grad", ["x"], 3)
    args, names = random_args(m, "block_loss", rng)
    xs = rng.standard_normal((3, 1, 6, 16)).astype(np.float32)
    params = {k: v for k, v in args.items() if k != "x"}
    outs = rlx.compile(m, entry="block_loss_grad_vmap")(x=xs, **params, d_output=np.float32(1))
    for i in range(3):
        p = torch_params(args, names)
        y = torch_block(torch.tensor(xs[i]), p, heads=2)
        (y * y).mean().backward()
        for k, name in enumerate(names):
            want = p[name].grad.numpy()
            np.testing.assert_allclose(outs[1 + k][i], want, rtol=1e-3,
                                       atol=1e-4 * np.abs(want).max(), err_msg=name)


def test_transformer_block_hessian_vector_product_jvp_of_grad_native():
    rng = np.random.default_rng(3)
    m = block_module()
    args, names = random_args(m, "block_loss", rng)
    rlx.jvp(m, "block_loss_grad", wrt=names)
    tangents = {f"tangent_{n}": (0.1 * rng.standard_normal(args[n].shape)).astype(np.float32)
                for n in names}
    outs = rlx.compile(m, entry="block_loss_grad_jvp")(**args, d_output=np.float32(1),
                                                       **tangents)
    hvp = outs[len(outs) - len(names):]

    x = torch.tensor(args["x"])
    primals = tuple(torch.tensor(args[n], dtype=torch.float64) for n in names)

    def loss(*ps):
        p = dict(zip(names, ps, strict=True))
        y = torch_block(x.double(), p, heads=2)
        return (y * y).mean()

    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.MATH):  # the math kernel supports forward-mode AD
        _, want = torch.func.jvp(
            torch.func.grad(loss, argnums=tuple(range(len(names)))), primals,
            tuple(torch.tensor(tangents[f"tangent_{n}"], dtype=torch.float64) for n in names))
    for name, got, w in zip(names, hvp, want, strict=True):
        w = w.numpy()
        np.testing.assert_allclose(got, w, rtol=2e-3, atol=2e-3 * np.abs(w).max(), err_msg=name)
