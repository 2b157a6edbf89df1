"""Reverse over reverse through attention: the VJP rules of rlx.attention_backward and
rlx.attention_backward_jvp (finite differences in f64 for every mask kind, GQA, S != S_kv,
score_scale and softcap), and a gradient penalty against PyTorch's double backward, in the
interpreter and natively."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_transforms_attention import (
    BY_ID,
    CASES,
    backward_jvp_module,
    backward_module,
    finite_args,
    wrt_params,
)

import rlx_mlir as rlx
from rlx_mlir.ir import to_text
from rlx_mlir.testing import check_grads


def _args(case, rng):
    args = finite_args(case, rng)
    if case.mask == "bias":  # finite differences need a finite bias
        args["mask"] = rng.standard_normal(case.mask_type()[0])
    return args


@pytest.mark.parametrize(("case", "wrt"), wrt_params(CASES))
def test_vjp_of_attention_backward_matches_finite_differences(case, wrt, rng):
    names = [n for n in ("q", "k", "v", "dy") if (n, wrt) != ("v", "v")]  # dv = P^T dy
    names += ["mask"] if case.mask == "bias" else []
    report = check_grads(backward_module(case, wrt), "f", wrt=names, args=_args(case, rng))
    assert report.ok


@pytest.mark.parametrize(("case", "wrt"), wrt_params(
    [BY_ID[i] for i in ("none_gqa2", "causal_s_gt_skv_masked_rows", "custom_float",
                        "softcap_bias_scale")]))
def test_vjp_of_attention_backward_jvp_matches_finite_differences(case, wrt, rng):
    names = [n for n in ("q", "k", "v", "dy") if (n, wrt) != ("v", "v")]
    names += [f"t{n}" for n in names] + (["t_bias"] if case.mask == "bias" else [])
    report = check_grads(backward_jvp_module(case, wrt), "f", wrt=names, args=_args(case, rng))
    assert report.ok


def test_double_backward_is_built_from_primitive_ops():
    """No new attention op: the second reverse sweep differentiates primitive ops."""
    m = backward_module(BY_ID["softcap_bias_scale"], "k")
    text = to_text(rlx.grad_with_loss(m, "f"))
    assert text.count("rlx.attention_backward ") == 1  # the mirrored primal op
    assert "rlx.softmax" in text and "rlx.matmul" in text


def _penalty(q, k, v, kwargs):
    """``|| d/dq sum(attention(q, k, v)^2) ||^2`` (a gradient penalty)."""
    dq = rlx.grad(lambda q: (rlx.nn.attention(q, k, v, **kwargs) ** 2).sum())(q)
    return (dq * dq).sum()


def _torch_attention(q, k, v, heads, kv_heads, causal):
    split = lambda x, h: x.reshape(*x.shape[:2], h, -1).transpose(1, 2)  # noqa: E731
    qh = split(q, heads)
    kh, vh = (split(x, kv_heads).repeat_interleave(heads // kv_heads, 1) for x in (k, v))
    s = qh @ kh.transpose(-1, -2) / qh.shape[-1] ** 0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), -torch.inf)
    return (torch.softmax(s, -1) @ vh).transpose(1, 2).reshape(q.shape)


def _torch_penalty(q, k, v, heads, kv_heads, causal):
    q, k, v = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
    out = _torch_attention(q, k, v, heads, kv_heads, causal)
    (dq,) = torch.autograd.grad((out ** 2).sum(), q, create_graph=True)
    (dq * dq).sum().backward()
    return [x.grad.numpy() for x in (q, k, v)]


@pytest.mark.parametrize("causal", [False, True])
def test_gradient_penalty_matches_torch_double_backward(causal, rng):
    heads, kv_heads = 4, 2
    q = rng.standard_normal((2, 6, 4 * 3))
    k, v = (rng.standard_normal((2, 6, 2 * 3)) for _ in range(2))
    kwargs = dict(num_heads=heads, num_kv_heads=kv_heads,
                  mask_kind="causal" if causal else "none")
    got = rlx.grad(lambda q, k, v: _penalty(q, k, v, kwargs), argnums=(0, 1, 2))(q, k, v)
    want = _torch_penalty(q, k, v, heads, kv_heads, causal)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11)
