"""jvp and vmap of the nn family and its backward ops: tangents vs finite differences, vmap
vs a loop of per-row runs, the JIT vs the interpreter, and Hessian-vector products through
the norms and cross-entropy (jvp of a gradient) against torch."""

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.testing import check_jvp

B = 3
F = "f64"




def build(op, operands, dtype=F, **attrs):
    """``@f(operands...) -> rlx.<op>(operands...)``; operands ``name -> shape`` (``labels``
    is i64)."""
    b = rlx.Builder("f")
    args = [b.input(name, shape, "i64" if name == "labels" else dtype)
            for name, shape in operands.items()]
    b.ret(b.emit(op, *args, **attrs))
    return b.module


def softmax_cases():
    return {"last": ((3, 4), {}), "axis0": ((3, 4), {"axis": 0}),
            "neg_middle": ((2, 3, 4), {"axis": -2}), "rank1": ((5,), {"axis": 0})}


# case -> (x shape, attributes)
ROW_CASES = {"rank2": ((3, 5), {}), "rank3_eps": ((2, 3, 4), {"eps": 0.1}),
             "positive_axis": ((3, 4), {"axis": 1}), "rank1": ((4,), {"axis": -1})}
GROUP_CASES = {"ncl": ((2, 4, 3), {"num_groups": 2}),
               "nchw_eps": ((2, 6, 2, 2), {"num_groups": 3, "eps": 0.01}),
               "one_group": ((1, 3, 4), {"num_groups": 1})}
BN_CASES = {"rank2": ((4, 3), {}), "rank3_eps": ((2, 5, 3), {"eps": 0.1}), "rank1": ((3,), {})}
SCE_CASES = {"4x5": ((4, 5), {}), "1x3": ((1, 3), {})}
# x shape, table width (head_dim / 2), attributes
ROPE_CASES = {"seq_hidden": ((3, 8), 2, {"head_dim": 4}),
              "batch_partial": ((2, 3, 8), 2, {"head_dim": 4, "n_rot": 2}),
              "head6_rot4": ((2, 3, 12), 3, {"head_dim": 6, "n_rot": 4})}


def row_operands(x, with_beta=True):
    d = (x[-1],)
    return {"x": x, "gamma": d, **({"beta": d} if with_beta else {})}


def group_operands(x):
    return {"x": x, "gamma": (x[1],), "beta": (x[1],)}


def bn_operands(x):
    c = (x[-1],)
    return {"x": x, "gamma": c, "beta": c, "mean": c, "var": c}


def rope_operands(case, x_name="x"):
    x, width, _ = ROPE_CASES[case]
    table = (x[-2], width)
    return {x_name: x, "cos": table, "sin": table}


def gamma_shape(op, x):
    return (x[1],) if op.startswith("group") else (x[-1],)


# op -> (case table, operands(case) -> (name -> shape, attrs), vmap subsets)
def _ops():
    def row(c, beta=True):
        return row_operands(ROW_CASES[c][0], beta), ROW_CASES[c][1]

    def grp(c):
        return group_operands(GROUP_CASES[c][0]), GROUP_CASES[c][1]

    def bn(c):
        return bn_operands(BN_CASES[c][0]), BN_CASES[c][1]

    def soft(c):
        return {"x": softmax_cases()[c][0]}, softmax_cases()[c][1]

    def sce(c, backward=False):
        n, k = SCE_CASES[c][0]
        return {"logits": (n, k), "labels": (n,), **({"d_loss": (n,)} if backward else {})}, {}

    def rope(c, name="x"):
        return rope_operands(c, name), ROPE_CASES[c][2]

    def norm_input(cases, op):
        return lambda c: ({"x": cases[c][0], "gamma": gamma_shape(op, cases[c][0]),
                           "dy": cases[c][0]}, cases[c][1])

    def norm_gamma(cases):
        return lambda c: ({"x": cases[c][0], "dy": cases[c][0]}, cases[c][1])

    def bn_input(c):
        x, attrs = BN_CASES[c]
        return {"gamma": (x[-1],), "var": (x[-1],), "dy": x}, attrs

    def bn_gamma(c):
        x, attrs = BN_CASES[c]
        return {"x": x, "mean": (x[-1],), "var": (x[-1],), "dy": x}, attrs

    return {
        "softmax": (softmax_cases(), soft),
        "log_softmax": (softmax_cases(), soft),
        "layer_norm": (ROW_CASES, row),
        "rms_norm": (ROW_CASES, row),
        "rms_norm_no_beta": (ROW_CASES, lambda c: row(c, beta=False)),
        "group_norm": (GROUP_CASES, grp),
        "batch_norm_inference": (BN_CASES, bn),
        "softmax_cross_entropy": (SCE_CASES, sce),
        "rope": (ROPE_CASES, rope),
        "layer_norm_backward_input": (ROW_CASES, norm_input(ROW_CASES, "layer")),
        "layer_norm_backward_gamma": (ROW_CASES, norm_gamma(ROW_CASES)),
        "rms_norm_backward_input": (ROW_CASES, norm_input(ROW_CASES, "rms")),
        "rms_norm_backward_gamma": (ROW_CASES, norm_gamma(ROW_CASES)),
        "group_norm_backward_input": (GROUP_CASES, norm_input(GROUP_CASES, "group")),
        "group_norm_backward_gamma": (GROUP_CASES, norm_gamma(GROUP_CASES)),
        "group_norm_backward_beta": (GROUP_CASES, lambda c: ({"dy": GROUP_CASES[c][0]}, {})),
        "batch_norm_inference_backward_input": (BN_CASES, bn_input),
        "batch_norm_inference_backward_gamma": (BN_CASES, bn_gamma),
        "batch_norm_inference_backward_beta": (BN_CASES, lambda c: ({"dy": BN_CASES[c][0]}, {})),
        "softmax_cross_entropy_backward": (SCE_CASES, lambda c: sce(c, backward=True)),
        "rope_backward": (ROPE_CASES, lambda c: rope(c, "dy")),
    }


OPS = _ops()


def module(op, case, dtype=F):
    operands, attrs = OPS[op][1](case)
    return build(op.removesuffix("_no_beta"), operands, dtype, **attrs), operands


def floats(op, case):
    return [n for n in OPS[op][1](case)[0] if n != "labels"]


def sample(operands, rng, dtype=np.float64):
    """Random operands: var positive, labels in [-1, C] (one past each end: zero one-hot)."""
    out = {}
    for name, shape in operands.items():
        if name == "labels":
            out[name] = rng.integers(-1, operands["logits"][1] + 1, shape).astype(np.int64)
        elif name == "var":
            out[name] = (np.abs(rng.standard_normal(shape)) + 0.5).astype(dtype)
        else:
            out[name] = rng.standard_normal(shape).astype(dtype)
    return out


def params(kind):
    """(op, case, names): every float operand alone and all together (kind 'jvp'); for
    'vmap' also the labels and, with three or more operands, each pair with x."""
    out = []
    for op, (cases, _) in OPS.items():
        for case in cases:
            names = list(OPS[op][1](case)[0])
            fl = floats(op, case)
            items = [[n] for n in (fl if kind == "jvp" else names)]
            if len(fl) > 1:
                items.append(fl if kind == "jvp" else names)
            if kind == "vmap" and len(names) > 2:
                items += [[names[0], n] for n in names[1:-1]]
            out += [pytest.param(op, case, item, id=f"{op}-{case}-{'+'.join(item)}")
                    for item in items]
    return out


# ---------------------------------------------------------------- jvp


FROZEN = {"batch_norm_inference": {"mean", "var"}, "rope": {"cos", "sin"},
          "rope_backward": {"cos", "sin"}}
"""Operands with no gradient by definition (SPEC Appendix A), hence no tangent either."""


@pytest.mark.parametrize("op,case,wrt", params("jvp"))
def test_jvp_matches_finite_differences(op, case, wrt):
    """The tangent against finite differences; frozen operands' tangents are dropped, so
    differentiating with respect to them alone gives zero and, with others, the others'
    tangent."""
    m, operands = module(op, case)
    args = sample(operands, np.random.default_rng(1))
    live = [n for n in wrt if n not in FROZEN.get(op, set())]
    if live:
        check_jvp(m, wrt=live, args=args)
    frozen = [n for n in wrt if n in FROZEN.get(op, set())]
    if frozen:
        tangent_fn = rlx.jvp(m, "f", frozen).sym_name.data
        tangents = [np.ones_like(args[n]) for n in frozen]
        outs = rlx.interpret(m, *[args[n] for n in operands], *tangents, entry=tangent_fn)
        np.testing.assert_array_equal(outs[-1], 0)


def test_jvp_tangent_shapes_and_zero_label_tangent():
    m, _ = module("softmax_cross_entropy", "4x5")
    g = rlx.jvp(m, "f", ["logits"])
    assert [tuple(t.get_shape()) for t in g.function_type.outputs.data] == [(4,), (4,)]


# ---------------------------------------------------------------- vmap


def run_vmap(op, case, batched, dtype=np.float64):
    """(module with @f_vmap, batched args, per-row args builder)."""
    m, operands = module(op, case, "f64" if dtype == np.float64 else "f32")
    rlx.vmap(m, "f", batched, B)
    rng = np.random.default_rng(2)
    per_row = [sample(operands, rng, dtype) for _ in range(B)]
    args = {n: np.stack([r[n] for r in per_row]) if n in batched else per_row[0][n]
            for n in operands}
    return m, args


@pytest.mark.parametrize("op,case,batched", params("vmap"))
def test_vmap_matches_a_loop(op, case, batched):
    m, args = run_vmap(op, case, batched)
    outs = rlx.interpret(m, entry="f_vmap", **args)
    for i in range(B):
        row = {n: v[i] if n in batched else v for n, v in args.items()}
        for got, want in zip(outs, rlx.interpret(m, entry="f", **row), strict=True):
            assert got.shape[0] == B
            np.testing.assert_allclose(got[i], want, rtol=1e-10, atol=1e-12)


def test_vmap_does_not_unroll():
    """Batched parameters and tables are folded or composed, never one op per element."""
    for op, case, batched in [("rope", "batch_partial", ["cos"]), ("group_norm", "ncl", ["gamma"]),
                              ("layer_norm_backward_gamma", "rank3_eps", ["x"])]:
        m, _ = module(op, case)
        g = rlx.vmap(m, "f", batched, B)
        assert "rlx.concat" not in rlx.to_text(g)


# ---------------------------------------------------------------- JIT


def assert_jit_matches_interpreter(m, entry, arrays, rtol=1e-5):
    got = rlx.compile(m, entry=entry)(*arrays)
    want = rlx.interpret(m, *arrays, entry=entry)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


JIT_VMAP = [("layer_norm", "rank3_eps", ["x", "gamma"]), ("group_norm", "nchw_eps", ["x", "beta"]),
            ("rope", "batch_partial", ["x", "sin"]),
            ("softmax_cross_entropy", "4x5", ["logits", "labels"]),
            ("rms_norm_backward_gamma", "rank2", ["x"]),
            ("batch_norm_inference_backward_gamma", "rank3_eps", ["var"])]


@pytest.mark.parametrize("op,case,batched", JIT_VMAP, ids=lambda v: str(v))
def test_jit_of_vmap(op, case, batched):
    m, args = run_vmap(op, case, batched, np.float32)
    assert_jit_matches_interpreter(m, "f_vmap", list(args.values()))


JIT_JVP = [("softmax", "neg_middle"), ("layer_norm", "rank2"), ("rope", "head6_rot4"),
           ("layer_norm_backward_input", "rank3_eps"), ("softmax_cross_entropy_backward", "4x5"),
           ("group_norm_backward_input", "ncl"), ("batch_norm_inference", "rank3_eps")]


@pytest.mark.parametrize("op,case", JIT_JVP, ids=lambda v: str(v))
def test_jit_of_jvp(op, case):
    m, operands = module(op, case, "f32")
    g = rlx.jvp(m, "f")
    rng = np.random.default_rng(3)
    values = sample(operands, rng, np.float32)
    wrt = [a.data for a in g.attributes["rlx.wrt"].data]
    tangents = [rng.standard_normal(values[n].shape).astype(np.float32) for n in wrt]
    assert_jit_matches_interpreter(m, "f_jvp", [*values.values(), *tangents], rtol=1e-4)


# ---------------------------------------------------------------- Hessian-vector products


def block_module():
    """A small transformer-ish loss: rms/layer norm, rope, softmax and cross-entropy."""
    b = rlx.Builder("loss")
    x, labels = b.input("x", (4, 8), F), b.input("labels", (4,), "i64")
    cos, sin = b.input("cos", (4, 2), F), b.input("sin", (4, 2), F)
    g1, b1 = b.param("g1", (8,), F), b.param("b1", (8,), F)
    w, g2 = b.param("w", (8, 8), F), b.param("g2", (8,), F)
    h = b.rope(b.layer_norm(x, g1, b1), cos, sin, head_dim=4)
    h = b.rms_norm(b.softmax(h @ w, axis=-1) + h, g2)
    b.ret(b.reduce_sum(b.softmax_cross_entropy(b.log_softmax(h, axis=0) + h, labels), axes=[0]))
    m = b.module
    rlx.grad_with_loss(m, "loss")
    return m


def block_args(rng):
    s = np.arange(4)[:, None] * np.array([1.0, 0.1])[None]
    return {"x": rng.standard_normal((4, 8)), "labels": np.array([0, 3, 7, 1]),
            "cos": np.cos(s), "sin": np.sin(s), "g1": 1 + 0.1 * rng.standard_normal(8),
            "b1": 0.1 * rng.standard_normal(8), "w": 0.3 * rng.standard_normal((8, 8)),
            "g2": 1 + 0.1 * rng.standard_normal(8)}


def test_jvp_of_grad_through_norms_and_cross_entropy_matches_finite_differences():
    check_jvp(block_module(), "loss_grad", wrt=["x", "g1", "b1", "w", "g2"],
              args=block_args(np.random.default_rng(4)))


def torch_block(x, labels, cos, sin, g1, b1, w, g2):
    h = torch.nn.functional.layer_norm(x, (8,), g1, b1)
    heads = h.reshape(4, 2, 4)
    first, second = heads[..., :2], heads[..., 2:]
    c, s = cos[:, None], sin[:, None]
    h = torch.cat([first * c - second * s, second * c + first * s], -1).reshape(4, 8)
    h = torch.softmax(h @ w, -1) + h
    h = h * torch.rsqrt((h * h).mean(-1, keepdim=True) + 1e-6) * g2
    z = torch.log_softmax(h, 0) + h
    return torch.nn.functional.cross_entropy(z, labels, reduction="sum")


def test_hessian_vector_product_of_block_matches_torch():
    m = block_module()
    wrt = ["g1", "b1", "w", "g2"]
    rlx.jvp(m, "loss_grad", wrt=wrt)
    rng = np.random.default_rng(5)
    args = block_args(rng)
    v = {n: rng.standard_normal(args[n].shape) for n in wrt}
    outs = rlx.interpret(m, *args.values(), np.float64(1.0), *v.values(), entry="loss_grad_jvp")
    hvp = outs[-len(wrt):]
    t = {n: torch.tensor(a) for n, a in args.items()}
    primals = [t[n].requires_grad_() for n in wrt]

    def grads(*ps):
        kw = {**t, **dict(zip(wrt, ps, strict=True))}
        loss = torch_block(**kw)
        return torch.autograd.grad(loss, ps, create_graph=True)

    _, want = torch.autograd.functional.jvp(grads, tuple(primals),
                                            tuple(torch.tensor(v[n]) for n in wrt))
    for got, w_ in zip(hvp, want, strict=True):
        np.testing.assert_allclose(got, w_.detach().numpy(), rtol=1e-8, atol=1e-10)

