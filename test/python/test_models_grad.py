"""Whole-model gradients (``--autodiff`` on the interpreter) against PyTorch autograd."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx
from rlx_mlir.models import llama_block_loss, mlp_loss, transformer_block_loss
from rlx_mlir.runtime.signature import Signature
from rlx_mlir.testing import check_grads


def random_args(module, entry, rng, int_high=4):
    sig = Signature.of(rlx.ir.find_func(module, entry))
    args = {}
    for a in sig.args:
        if a.dtype.kind == "f":
            scale = 0.2 if a.is_param else 1.0
            args[a.name] = (scale * rng.standard_normal(a.shape)).astype(a.dtype)
        else:
            args[a.name] = rng.integers(0, int_high, a.shape).astype(a.dtype)
    return args, [a.name for a in sig.args if a.is_param]


def rlx_grads(module, entry, args, native=False):
    """(loss, {param: gradient}) from ``@<entry>_grad``, interpreted or compiled."""
    g = rlx.grad_with_loss(module, entry)
    grad_entry = g.sym_name.data
    if native:
        outs = rlx.compile(module, entry=grad_entry)(**args, d_output=np.float32(1))
    else:
        outs = rlx.interpret(module, entry=grad_entry, **args, d_output=np.float32(1))
    names = [a.data for a in g.attributes["rlx.wrt"].data]
    return outs[0], dict(zip(names, outs[1:], strict=True))


def assert_grads_match(loss, grads, torch_loss, params):
    torch_loss.backward()
    np.testing.assert_allclose(loss, torch_loss.item(), rtol=1e-4)
    for name, t in params.items():
        want = t.grad.numpy()
        scale = np.abs(want).max() + 1e-12
        np.testing.assert_allclose(grads[name] / scale, want / scale, atol=1e-4, err_msg=name)


def torch_params(args, names):
    return {n: torch.tensor(args[n], requires_grad=True) for n in names}


def assert_mlp_grads_match(loss, grads, args, names):
    """``mlp_loss`` (3 layers, relu, cross entropy) in torch against ``loss``, ``grads``."""
    p = torch_params(args, names)
    h = torch.tensor(args["x"])
    for i in range(3):
        h = h @ p[f"w{i}"] + p[f"b{i}"]
        h = torch.relu(h) if i < 2 else h
    assert_grads_match(loss, grads, F.cross_entropy(h, torch.tensor(args["labels"]).long()), p)


def test_mlp_with_cross_entropy_matches_torch():
    rng = np.random.default_rng(0)
    m = mlp_loss(batch=16, sizes=(12, 20, 20, 5))
    args, names = random_args(m, "mlp_loss", rng, int_high=5)
    loss, grads = rlx_grads(m, "mlp_loss", args)
    assert_mlp_grads_match(loss, grads, args, names)


def torch_block(x, p, heads, causal=True):
    B, S, D = x.shape
    hd = D // heads
    h = F.layer_norm(x, (D,), p["ln1_g"], p["ln1_b"])
    q, k, v = (
        (h @ p[f"w{n}"]).reshape(B, S, heads, hd).transpose(1, 2) for n in "qkv"
    )
    a = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    x = x + a.transpose(1, 2).reshape(B, S, D) @ p["wo"]
    h = F.layer_norm(x, (D,), p["ln2_g"], p["ln2_b"])
    h = F.gelu(h @ p["w1"] + p["b1"])
    return x + h @ p["w2"] + p["b2"]


def assert_block_grads_match(loss, grads, args, names):
    """``transformer_block_loss`` (2 heads, mean of squares) in torch against ``loss``,
    ``grads``."""
    p = torch_params(args, names)
    y = torch_block(torch.tensor(args["x"]), p, heads=2)
    assert_grads_match(loss, grads, (y * y).mean(), p)


def test_transformer_block_matches_torch():
    rng = np.random.default_rng(1)
    m = transformer_block_loss(batch=2, seq=6, d_model=16, heads=2)
    args, names = random_args(m, "block_loss", rng)
    loss, grads = rlx_grads(m, "block_loss", args)
    assert_block_grads_match(loss, grads, args, names)


def torch_rope(x, cos, sin, heads):
    B, S, W = x.shape
    hd = W // heads
    xh = x.reshape(B, S, heads, hd)
    x1, x2 = xh[..., : hd // 2], xh[..., hd // 2:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], -1).reshape(B, S, W)


def test_llama_block_matches_torch():
    rng = np.random.default_rng(2)
    heads, kv_heads, d = 4, 2, 16
    m = llama_block_loss(batch=2, seq=5, d_model=d, heads=heads, kv_heads=kv_heads, hidden=24)
    args, names = random_args(m, "llama_loss", rng)
    loss, grads = rlx_grads(m, "llama_loss", args)
    p = torch_params(args, names)
    x, cos, sin = (torch.tensor(args[n]) for n in ("x", "cos", "sin"))
    hd = d // heads

    def rms(t, g):
        return t * torch.rsqrt((t * t).mean(-1, keepdim=True) + 1e-6) * g

    h = rms(x, p["norm1"])
    q = torch_rope(h @ p["wq"], cos, sin, heads).reshape(2, 5, heads, hd).transpose(1, 2)
    k = torch_rope(h @ p["wk"], cos, sin, kv_heads).reshape(2, 5, kv_heads, hd).transpose(1, 2)
    v = (h @ p["wv"]).reshape(2, 5, kv_heads, hd).transpose(1, 2)
    rep = heads // kv_heads
    a = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1),
                                       v.repeat_interleave(rep, 1), is_causal=True)
    x = x + a.transpose(1, 2).reshape(2, 5, d) @ p["wo"]
    h = rms(x, p["norm2"])
    y = x + (F.silu(h @ p["w_gate"]) * (h @ p["w_up"])) @ p["w_down"]
    assert_grads_match(loss, grads, (y * y).mean(), p)


@pytest.mark.parametrize("build,entry", [
    (lambda: mlp_loss(batch=4, sizes=(5, 6, 3)), "mlp_loss"),
    (lambda: transformer_block_loss(batch=1, seq=4, d_model=8, heads=2), "block_loss"),
    (lambda: llama_block_loss(batch=1, seq=3, d_model=8, heads=2, kv_heads=1, hidden=8),
     "llama_loss"),
])
def test_models_pass_finite_difference_check(build, entry):
    check_grads(build(), entry, int_high=3, max_elementwise=0, directions=3)
