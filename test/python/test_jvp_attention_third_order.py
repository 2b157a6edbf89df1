"""Third derivatives through attention: the JVP rules of rlx.attention_jvp and
rlx.attention_backward_jvp (finite differences in f64 for every mask kind, GQA, S != S_kv,
score_scale and softcap), and jvp of an HVP of an attention loss against PyTorch, in the
interpreter and natively."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_grad_attention import torch_attention
from test_transforms_attention import (
    BY_ID,
    CASES,
    Case,
    backward_jvp_module,
    finite_args,
    jvp_op_module,
    vmap_args,
    wrt_params,
)

import rlx_mlir as rlx
from rlx_mlir.ir import find_func, to_text
from rlx_mlir.runtime.signature import Signature
from rlx_mlir.testing import check_jvp


def differentiable(m, case: Case) -> list[str]:
    """The float arguments of ``@f``; a custom mask (i1, or piecewise constant) left out."""
    return [a.name for a in Signature.of(find_func(m, "f")).args
            if a.name != "mask" or case.mask == "bias"]


# ---------------------------------------------------------------- the two rules


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jvp_of_attention_jvp_matches_finite_differences(case, rng):
    m = jvp_op_module(case)
    report = check_jvp(m, "f", wrt=differentiable(m, case), args=finite_args(case, rng))
    assert report.ok and report.args[0].max_rel_error < 1e-8


@pytest.mark.parametrize(("case", "wrt"), wrt_params(CASES))
def test_jvp_of_attention_backward_jvp_matches_finite_differences(case, wrt, rng):
    m = backward_jvp_module(case, wrt)
    report = check_jvp(m, "f", wrt=differentiable(m, case), args=finite_args(case, rng))
    assert report.ok and report.args[0].max_rel_error < 1e-8


def test_jvp_of_the_jvp_ops_emits_primitives_only():
    """No further attention op: the second-order tangent is built from primitive ops."""
    case = BY_ID["softcap_bias_scale"]
    for m in (jvp_op_module(case), backward_jvp_module(case, "k")):
        g = rlx.jvp(m, "f")
        text = to_text(g).split("func.return")[0]
        assert text.count("rlx.attention") == 1  # the mirrored primal op
        assert "rlx.softmax" in text and "rlx.matmul" in text


@pytest.mark.parametrize("case", [BY_ID["causal_s_gt_skv_masked_rows"], BY_ID["custom_i1_gqa2"],
                                  BY_ID["softcap_bias_scale"]], ids=lambda c: c.id)
def test_jit_of_the_second_order_tangents_matches_interpreter(case, rng):
    for m in (jvp_op_module(case), backward_jvp_module(case, case.wrts[-1])):
        g = rlx.jvp(m, "f", wrt=differentiable(m, case))
        args = vmap_args(m, [], rng, case)
        args.update({f"tangent_{n}": rng.standard_normal(np.shape(args[n]))
                     for n in differentiable(m, case)})
        arrays = [args[a.name] for a in Signature.of(g).args]
        got = rlx.compile(m, entry="f_jvp")(*arrays)
        want = rlx.interpret(m, *arrays, entry="f_jvp")
        for x, y in zip(got, want, strict=True):
            assert np.isfinite(y).all()
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- jvp of an HVP vs torch


THIRD_ORDER = [
    Case("causal_gqa_softcap_scale", 1, 3, 5, 4, 2, 2,
         {"mask_kind": "causal", "softcap": 1.25, "score_scale": 0.75}),
    Case("bias_mqa_softcap", 2, 4, 3, 2, 1, 2, {"mask_kind": "bias", "softcap": 0.875}, "bias"),
]


def third_order_module(case: Case):
    """``loss = sum(attention^3)``; adds @loss_grad, its jvp (an HVP) and the jvp of that."""
    b = rlx.Builder("loss")
    xs = [b.param(n, s, "f64") for n, s in case.shapes().items()]
    if case.mask == "bias":
        xs.append(b.param("bias", *case.mask_type()))
    o = b.attention(*xs, **case.all_attrs)
    b.ret(b.reduce_sum(o * o * o, axes=[0, 1, 2]))
    m = b.module
    names = [*case.shapes(), *(["bias"] if case.mask == "bias" else [])]
    rlx.grad_with_loss(m, "loss")
    rlx.jvp(m, "loss_grad", wrt=names)
    g = rlx.jvp(m, "loss_grad_jvp", wrt=names)
    # the second tangent level gets fresh names: tangent_<x>_1
    assert Signature.of(g).args[-1].name == f"tangent_{names[-1]}_1"
    return m, names


def torch_third_order(case: Case, primals, u, w):
    """``d/dw (H(x) u)``: jvp of a jvp of the gradient."""
    def loss(q, k, v, bias=None):
        return (torch_attention(case, q, k, v, None, bias) ** 3).sum()

    grad = torch.func.grad(loss, argnums=tuple(range(len(primals))))

    def hvp(*xs):
        return torch.func.jvp(grad, xs, u)[1]

    return torch.func.jvp(hvp, primals, w)[1]


@pytest.mark.parametrize(("case", "native"), zip(THIRD_ORDER, (True, False), strict=True),
                         ids=lambda x: getattr(x, "id", "jit" if x else "interpreter"))
def test_jvp_of_an_hvp_matches_torch(case, native, rng):
    """The interpreter, and for one case (the JIT takes ~10 s to build it) the JIT too."""
    m, names = third_order_module(case)
    hvp = to_text(find_func(m, "loss_grad_jvp"))
    assert "rlx.attention_jvp" in hvp and "rlx.attention_backward_jvp" in hvp
    shapes = {**case.shapes(), **({"bias": case.mask_type()[0]} if case.mask else {})}
    primals, u, w = ([rng.standard_normal(shapes[n]) * 0.7 for n in names] for _ in range(3))
    arrays = [*primals, np.float64(1.0), *u, *w]
    want = torch_third_order(case, *(tuple(map(torch.tensor, xs)) for xs in (primals, u, w)))
    n = len(names)
    runs = [rlx.interpret(m, *arrays, entry="loss_grad_jvp_jvp")]
    if native:
        runs.append(rlx.compile(m, entry="loss_grad_jvp_jvp")(*arrays))
    for outs in runs:
        third = outs[-n:]
        for got, ref in zip(third, want, strict=True):
            assert np.abs(ref.numpy()).max() > 1e-3
            np.testing.assert_allclose(got, ref.numpy(), rtol=1e-9, atol=1e-10)
