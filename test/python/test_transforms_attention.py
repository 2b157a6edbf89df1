"""jvp and vmap of the attention family: tangents vs finite differences (f64) for every
mask kind, GQA, score_scale and softcap; jvp of attention_backward (HVPs); the VJP of
rlx.attention_jvp; vmap (batch folded into attention's B) vs a loop; the JIT vs the
interpreter on @f_vmap, @f_jvp and the two jvp ops."""

from __future__ import annotations

import numpy as np
import pytest
from test_grad_attention import BIAS, CAUSAL, CUSTOM, MASKS
from test_grad_attention import Case as AttentionCase

import rlx_mlir as rlx
from rlx_mlir.ir import parse, to_text, verify
from rlx_mlir.testing import check_grads, check_jvp
from rlx_mlir.transforms.vmap import vmap

BV = 3  # vmap size


class Case(AttentionCase):
    """test_grad_attention's Case (mask None, "padding", "float_padding" or "bias") with
    this file's mask values: a bias with ``-inf`` entries (and no fully masked row), a
    float key mask away from the 0.5 threshold."""

    def mask_value(self, rng: np.random.Generator) -> np.ndarray:
        shape, _ = self.mask_type()
        if self.mask == "bias":
            bias = rng.standard_normal(shape)
            bias[rng.random(shape) < 0.2] = -np.inf
            return bias
        keep = MASKS["padding"](self, rng, None)
        if self.mask == "padding":
            return keep
        return np.where(keep, 0.9, 0.2)  # float key mask, away from the 0.5 threshold


WINDOW = {"mask_kind": "sliding_window", "window": 1}

CASES = [
    Case("none_s_lt_skv", 2, 3, 5, 2, 2),
    Case("none_gqa2", 1, 4, 3, 4, 2, 3),
    Case("causal_mqa", 1, 3, 5, 2, 1, attrs=CAUSAL),
    Case("causal_s_gt_skv_masked_rows", 2, 5, 3, 2, 1, attrs=CAUSAL),
    Case("window_gqa2", 1, 4, 5, 4, 2, attrs=WINDOW),
    Case("custom_i1_gqa2", 2, 3, 5, 4, 2, attrs=CUSTOM, mask="padding"),
    Case("custom_float", 2, 3, 4, 2, 1, attrs=CUSTOM, mask="float_padding"),
    Case("bias_gqa2", 2, 3, 4, 4, 2, attrs=BIAS, mask="bias"),
    Case("score_scale_causal", 1, 4, 4, 2, 2, 3, {**CAUSAL, "score_scale": 0.7}),
    Case("softcap_gqa2", 1, 4, 5, 4, 2, 3, {**CAUSAL, "softcap": 1.5}),
    Case("softcap_bias_scale", 1, 3, 4, 2, 2, 2,
         {**BIAS, "softcap": 0.7, "score_scale": 1.3}, "bias"),
]
BY_ID = {c.id: c for c in CASES}


def forward_module(case: Case) -> rlx.Builder:
    """``@f(q, k, v[, mask]) -> attention`` (q, k, v and a bias are params)."""
    b = rlx.Builder("f")
    q, k, v = (b.param(n, s, "f64") for n, s in case.shapes().items())
    mask = []
    if case.mask is not None:
        arg = b.param if case.mask == "bias" else b.input
        mask = [arg("mask", *case.mask_type())]
    b.ret(b.attention(q, k, v, *mask, **case.all_attrs))
    return b.module


def backward_module(case: Case, wrt: str):
    """``@f(q, k, v, dy[, mask]) -> attention_backward(wrt)``."""
    b = rlx.Builder("f")
    q, k, v = (b.param(n, s, "f64") for n, s in case.shapes().items())
    dy = b.param("dy", case.shapes()["q"], "f64")
    mask = []
    if case.mask is not None:
        arg = b.param if case.mask == "bias" else b.input
        mask = [arg("mask", *case.mask_type())]
    b.ret(b.attention_backward(q, k, v, dy, *mask, **case.all_attrs, wrt=wrt))
    return b.module


def jvp_op_module(case: Case):
    """``@f(q, k, v, tq, tk, tv[, mask, t_bias]) -> attention_jvp``."""
    b = rlx.Builder("f")
    shapes = case.shapes()
    prim = [b.param(n, s, "f64") for n, s in shapes.items()]
    tans = [b.param(f"t{n}", s, "f64") for n, s in shapes.items()]
    masks = []
    if case.mask is not None:
        arg = b.param if case.mask == "bias" else b.input
        masks = [arg("mask", *case.mask_type())]
        if case.mask == "bias":
            masks.append(b.param("t_bias", *case.mask_type()))
    b.ret(b.attention_jvp(*prim, *tans, *masks, **case.all_attrs))
    return b.module


def backward_jvp_module(case: Case, wrt: str):
    """``@f(q, k, v, dy, tq, tk, tv, tdy[, mask, t_bias]) -> attention_backward_jvp``."""
    b = rlx.Builder("f")
    shapes = {**case.shapes(), "dy": case.shapes()["q"]}
    prim = [b.param(n, s, "f64") for n, s in shapes.items()]
    tans = [b.param(f"t{n}", s, "f64") for n, s in shapes.items()]
    masks = []
    if case.mask is not None:
        masks = [b.input("mask", *case.mask_type())]
        if case.mask == "bias":
            masks.append(b.param("t_bias", *case.mask_type()))
    b.ret(b.attention_backward_jvp(*prim, *tans, *masks, **case.all_attrs, wrt=wrt))
    return b.module


def finite_args(case: Case, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """A mask value for check_jvp/check_grads (random args elsewhere)."""
    return {} if case.mask is None else {"mask": case.mask_value(rng)}


# ---------------------------------------------------------------- jvp


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jvp_of_attention_matches_finite_differences(case, rng):
    m = forward_module(case)
    wrt = ["q", "k", "v"] + (["mask"] if case.mask == "bias" else [])
    args = finite_args(case, rng)
    if case.mask == "bias":  # finite differences need a finite bias
        args["mask"] = rng.standard_normal(case.mask_type()[0])
    check_jvp(m, "f", wrt=wrt, args=args)
    for one in wrt:  # each tangent alone (the v-only shortcut, zero tangents elsewhere)
        check_jvp(m, "f", wrt=[one], args=args)


def test_jvp_of_attention_uses_the_jvp_op_and_v_alone_reuses_attention():
    m = forward_module(BY_ID["causal_mqa"])
    text = to_text(rlx.jvp(m, "f", wrt=["q", "v"]))
    assert "rlx.attention_jvp" in text
    m = forward_module(BY_ID["causal_mqa"])
    text = to_text(rlx.jvp(m, "f", wrt=["v"]))
    assert "rlx.attention_jvp" not in text and text.count("rlx.attention ") == 2


def wrt_params(cases):
    return [pytest.param(c, w, id=f"{c.id}-{w}") for c in cases for w in c.wrts]


@pytest.mark.parametrize(("case", "wrt"), wrt_params(CASES))
def test_jvp_of_attention_backward_matches_finite_differences(case, wrt, rng):
    m = backward_module(case, wrt)
    names = ["q", "k", "v", "dy"] + (["mask"] if case.mask == "bias" else [])
    args = finite_args(case, rng)
    if case.mask == "bias":
        args["mask"] = rng.standard_normal(case.mask_type()[0])
    check_jvp(m, "f", wrt=names, args=args)
    check_jvp(m, "f", wrt=["dy"], args=args)  # linear in dy: attention_backward again


def test_hvp_of_an_attention_loss_matches_finite_differences(rng):
    """jvp of the gradient: attention_backward's JVP inside a whole HVP."""
    case = BY_ID["softcap_bias_scale"]
    b = rlx.Builder("loss")
    q, k, v = (b.param(n, s, "f64") for n, s in case.shapes().items())
    bias = b.param("mask", *case.mask_type())
    o = b.attention(q, k, v, bias, **case.all_attrs)
    b.ret(b.reduce_sum(b.tanh(o) * o, axes=[0, 1, 2]))
    m = b.module
    rlx.grad_with_loss(m, "loss")
    args = {"mask": rng.standard_normal(case.mask_type()[0])}
    check_jvp(m, "loss_grad", wrt=["q", "k", "v", "mask"], args=args)
    assert "rlx.attention_backward_jvp" in to_text(rlx.jvp(m, "loss_grad"))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_vjp_of_attention_jvp_matches_finite_differences(case, rng):
    """Reverse over forward: the transpose (attention_backward) and the curvature term
    (attention_backward_jvp)."""
    args = finite_args(case, rng)
    if case.mask == "bias":
        args["mask"] = rng.standard_normal(case.mask_type()[0])
    check_grads(jvp_op_module(case), "f", args=args)


@pytest.mark.parametrize("case", [BY_ID["custom_i1_gqa2"], BY_ID["softcap_bias_scale"]],
                         ids=lambda c: c.id)
def test_jvp_ops_round_trip_and_verify(case):
    for m in (jvp_op_module(case), backward_jvp_module(case, case.wrts[-1])):
        text = to_text(m)
        again = parse(text)
        verify(again)
        assert to_text(again) == text


def test_jvp_op_rejects_a_missing_bias_tangent():
    case = BY_ID["bias_gqa2"]
    b = rlx.Builder("f")
    shapes = case.shapes()
    xs = [b.input(n, s, "f64") for n, s in shapes.items()] * 2
    mask = b.input("mask", *case.mask_type())
    with pytest.raises(rlx.RlxError, match="mask_kind 'bias' takes operands .*t_bias"):
        b.attention_jvp(*xs, mask, **case.all_attrs)
    with pytest.raises(rlx.RlxError, match="tv must have the type of v"):
        b.attention_jvp(*xs[:5], xs[0], mask, mask, **case.all_attrs)


# ---------------------------------------------------------------- vmap

VMAP_SUBSETS = [["q"], ["k"], ["v"], ["q", "v"], ["q", "k", "v"], ["mask"], ["k", "mask"],
                ["q", "k", "v", "mask"]]


def vmap_args(m, batched: list[str], rng: np.random.Generator, case: Case,
              dtype=np.float64) -> dict[str, np.ndarray]:
    from rlx_mlir.ir import find_func
    from rlx_mlir.runtime.signature import Signature

    out = {}
    for a in Signature.of(find_func(m, "f")).args:
        lead = (BV,) if a.name in batched else ()
        if a.name == "mask":
            value = np.stack([case.mask_value(rng) for _ in range(BV)]) if lead else \
                case.mask_value(rng)
        else:
            value = rng.standard_normal(lead + tuple(a.shape))
        out[a.name] = value.astype(dtype) if value.dtype.kind == "f" else value
    return out


def assert_vmap_matches_loop(m, batched, args, rtol=1e-12):
    outs = rlx.interpret(m, entry="f_vmap", **args)
    for i in range(BV):
        row = {n: v[i] if n in batched else v for n, v in args.items()}
        for got, want in zip(outs, rlx.interpret(m, entry="f", **row), strict=True):
            np.testing.assert_allclose(got[i], want, rtol=rtol, atol=rtol)


def vmap_params():
    out = []
    for case in CASES:
        for subset in VMAP_SUBSETS:
            if "mask" in subset and case.mask is None:
                continue
            out.append(pytest.param(case, subset, id=f"{case.id}-{'_'.join(subset)}"))
    return out


@pytest.mark.parametrize(("case", "batched"), vmap_params())
def test_vmap_of_attention_matches_a_loop(case, batched, rng):
    m = forward_module(case)
    vmap(m, "f", batched, BV)
    assert_vmap_matches_loop(m, batched, vmap_args(m, batched, rng, case))


@pytest.mark.parametrize("case", [BY_ID["custom_i1_gqa2"], BY_ID["softcap_bias_scale"],
                                  BY_ID["causal_s_gt_skv_masked_rows"]], ids=lambda c: c.id)
@pytest.mark.parametrize("batched", [["dy"], ["k", "dy"], ["q", "k", "v", "dy", "mask"]])
def test_vmap_of_attention_backward_matches_a_loop(case, batched, rng):
    for wrt in case.wrts:
        m = backward_module(case, wrt)
        subset = [n for n in batched if n != "mask" or case.mask is not None]
        vmap(m, "f", subset, BV)
        assert_vmap_matches_loop(m, subset, vmap_args(m, subset, rng, case))


@pytest.mark.parametrize("case", [BY_ID["custom_float"], BY_ID["softcap_bias_scale"],
                                  BY_ID["window_gqa2"]], ids=lambda c: c.id)
@pytest.mark.parametrize("batched", [["tq"], ["q", "tv"], ["k", "tk", "mask"]])
def test_vmap_of_the_jvp_ops_matches_a_loop(case, batched, rng):
    subset = [n for n in batched if n != "mask" or case.mask is not None]
    modules = [jvp_op_module(case)] + [backward_jvp_module(case, w) for w in case.wrts]
    for m in modules:
        vmap(m, "f", subset, BV)
        assert_vmap_matches_loop(m, subset, vmap_args(m, subset, rng, case))


# ---------------------------------------------------------------- JIT


def assert_jit_matches_interpreter(m, entry: str, args: dict[str, np.ndarray]):
    from rlx_mlir.ir import find_func
    from rlx_mlir.runtime.signature import Signature

    arrays = [args[a.name] for a in Signature.of(find_func(m, entry)).args]
    got = rlx.compile(m, entry=entry)(*arrays)
    want = rlx.interpret(m, *arrays, entry=entry)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-11, atol=1e-12, err_msg=entry)


@pytest.mark.parametrize("case", [BY_ID["custom_i1_gqa2"], BY_ID["softcap_bias_scale"]],
                         ids=lambda c: c.id)
def test_jit_of_vmap_and_jvp_matches_interpreter(case, rng):
    m = forward_module(case)
    batched = ["q", "v", "mask"]
    vmap(m, "f", batched, BV)
    assert_jit_matches_interpreter(m, "f_vmap", vmap_args(m, batched, rng, case))
    m = forward_module(case)
    g = rlx.jvp(m, "f", wrt=["q", "k", "v"] + (["mask"] if case.mask == "bias" else []))
    args = vmap_args(m, [], rng, case)
    args.update({f"tangent_{n}": rng.standard_normal(a.shape) for n, a in args.items()
                 if a.dtype.kind == "f" and n != "mask" or case.mask == "bias" and n == "mask"})
    assert "rlx.attention_jvp" in to_text(g)
    assert_jit_matches_interpreter(m, "f_jvp", args)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_jit_of_the_jvp_ops_matches_interpreter(case, rng):
    """The lowering of attention_jvp and of attention_backward_jvp for every wrt."""
    for m in [jvp_op_module(case)] + [backward_jvp_module(case, w) for w in case.wrts]:
        assert_jit_matches_interpreter(m, "f", vmap_args(m, [], rng, case))
