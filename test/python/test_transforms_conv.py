"""jvp and vmap of the conv family: tangents vs finite differences, vmap vs a loop, the JIT
vs the interpreter, and the rlx.max_pool2d_jvp op (the tangent of max_pool2d)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx
from rlx_mlir.dialects.base import tensor
from rlx_mlir.dialects.conv import conv2d_config, conv2d_shape, pool2d_config, spatial_output
from rlx_mlir.testing import check_grads, check_jvp

B = 3

# x shape, w shape, attributes
CONV_CASES = {
    "plain": ((2, 3, 6, 6), (4, 3, 3, 3), {}),
    "stride_padding_dilation": ((2, 3, 7, 6), (4, 3, 3, 2),
                                {"stride": (2, 1), "padding": (1, 1), "dilation": (1, 2)}),
    "groups": ((2, 4, 5, 5), (6, 2, 3, 3), {"groups": 2, "padding": (1, 1)}),
    "depthwise": ((1, 3, 5, 5), (3, 1, 3, 3), {"groups": 3, "stride": (2, 2)}),
}

# x shape, attributes
POOL_CASES = {
    "default_stride": ((2, 3, 6, 6), {"kernel": (2, 2)}),
    "overlapping_padded": ((1, 2, 7, 7), {"kernel": (3, 3), "stride": (2, 2), "padding": (1, 1)}),
    "non_square": ((2, 2, 5, 6), {"kernel": (3, 2), "stride": (1, 2), "padding": (1, 0)}),
}




def build(op, operands, out=None, dtype="f64", **attrs):
    """``@f(operands...) -> rlx.<op>(operands...)``; ``out`` for caller-given results."""
    b = rlx.Builder("f")
    args = [b.input(name, shape, dtype) for name, shape in operands.items()]
    kw = {"out": [tensor(out, dtype)]} if out is not None else {}
    b.ret(b.emit(op, *args, **kw, **attrs))
    return b.module


def conv_operands(case, bias=True):
    x, w, attrs = CONV_CASES[case]
    operands = {"x": x, "w": w, **({"b": (w[0],)} if bias else {})}
    return operands, attrs


def dy_shape(case):
    x, w, attrs = CONV_CASES[case]
    return conv2d_shape(x, w, conv2d_config(attrs))


def pooled_shape(case):
    x, attrs = POOL_CASES[case]
    cfg = pool2d_config(attrs)
    return (*x[:2], *spatial_output(x[2:], cfg.kernel, cfg.stride, cfg.padding))


def conv_module(case, bias=True, dtype="f64"):
    operands, attrs = conv_operands(case, bias)
    return build("conv2d", operands, dtype=dtype, **attrs)


def backward_input_module(case, dtype="f64"):
    x, w, attrs = CONV_CASES[case]
    return build("conv2d_backward_input", {"dy": dy_shape(case), "w": w}, out=x, dtype=dtype,
                 **attrs)


def backward_weight_module(case, dtype="f64"):
    x, w, attrs = CONV_CASES[case]
    return build("conv2d_backward_weight", {"x": x, "dy": dy_shape(case)}, out=w, dtype=dtype,
                 **attrs)


def pool_module(op, case, dtype="f64"):
    x, attrs = POOL_CASES[case]
    return build(op, {"x": x}, dtype=dtype, **attrs)


def pool_pair_module(op, case, dtype="f64"):
    """max_pool2d_backward(x, dy) or max_pool2d_jvp(x, tx)."""
    x, attrs = POOL_CASES[case]
    second = pooled_shape(case) if op == "max_pool2d_backward" else x
    name = "dy" if op == "max_pool2d_backward" else "tx"
    return build(op, {"x": x, name: second}, dtype=dtype, **attrs)


# Every op of the family: (module factory, case names, float operands, vmap subsets)
OPS = {
    "conv2d": (conv_module, CONV_CASES, ["x", "w", "b"],
               [["x"], ["w"], ["b"], ["x", "w"], ["w", "b"], ["x", "w", "b"]]),
    "conv2d_no_bias": (lambda c, **k: conv_module(c, bias=False, **k), CONV_CASES, ["x", "w"],
                       [["x"], ["w"], ["x", "w"]]),
    "conv2d_backward_input": (backward_input_module, CONV_CASES, ["dy", "w"],
                              [["dy"], ["w"], ["dy", "w"]]),
    "conv2d_backward_weight": (backward_weight_module, CONV_CASES, ["x", "dy"],
                               [["x"], ["dy"], ["x", "dy"]]),
    "avg_pool2d": (lambda c, **k: pool_module("avg_pool2d", c, **k), POOL_CASES, ["x"], [["x"]]),
    "max_pool2d": (lambda c, **k: pool_module("max_pool2d", c, **k), POOL_CASES, ["x"], [["x"]]),
    "max_pool2d_backward": (lambda c, **k: pool_pair_module("max_pool2d_backward", c, **k),
                            POOL_CASES, ["x", "dy"], [["x"], ["dy"], ["x", "dy"]]),
    "max_pool2d_jvp": (lambda c, **k: pool_pair_module("max_pool2d_jvp", c, **k),
                       POOL_CASES, ["x", "tx"], [["x"], ["tx"], ["x", "tx"]]),
}


def params(kind):
    """(op, case, item) for every op, case and wrt operand (kind='wrt') or vmap subset."""
    out = []
    for op, (_, cases, floats, subsets) in OPS.items():
        items = [[f] for f in floats] + [floats] if kind == "wrt" else subsets
        out += [pytest.param(op, case, item, id=f"{op}-{case}-{'+'.join(item)}")
                for case in cases for item in items]
    return out


# ---------------------------------------------------------------- jvp


@pytest.mark.parametrize("op,case,wrt", params("wrt"))
def test_jvp_matches_finite_differences(op, case, wrt):
    check_jvp(OPS[op][0](case), wrt=wrt)


def test_jvp_of_max_pool2d_backward_in_x_is_zero():
    m = pool_pair_module("max_pool2d_backward", "overlapping_padded")
    g = rlx.jvp(m, "f", ["x"])
    assert "max_pool2d_jvp" not in rlx.to_text(g)
    rng = np.random.default_rng(0)
    x, dy = rng.standard_normal((1, 2, 7, 7)), rng.standard_normal((1, 2, 4, 4))
    _, t = rlx.interpret(m, x, dy, rng.standard_normal(x.shape), entry="f_jvp")
    assert not t.any()


def test_max_pool2d_jvp_matches_torch_forward_mode():
    x_shape, attrs = POOL_CASES["overlapping_padded"]
    m = pool_module("max_pool2d", "overlapping_padded")
    rlx.jvp(m, "f")
    rng = np.random.default_rng(1)
    x, tx = rng.standard_normal(x_shape), rng.standard_normal(x_shape)
    _, got = rlx.interpret(m, x, tx, entry="f_jvp")
    _, want = torch.func.jvp(lambda v: F.max_pool2d(v, 3, 2, 1), (torch.tensor(x),),
                             (torch.tensor(tx),))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def tied_input(rng, shape):
    """Few distinct values: many windows hold tied maxima."""
    return rng.integers(-1, 2, shape).astype(np.float64)


@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d_jvp_is_the_transpose_of_max_pool2d_backward_even_with_ties(case):
    """<jvp(x, t), u> == <t, backward(x, u)>: the same first-argmax convention."""
    x_shape, attrs = POOL_CASES[case]
    jvp_m = pool_pair_module("max_pool2d_jvp", case)
    bwd_m = pool_pair_module("max_pool2d_backward", case)
    rng = np.random.default_rng(2)
    x, t, u = tied_input(rng, x_shape), rng.standard_normal(x_shape), \
        rng.standard_normal(pooled_shape(case))
    for run in (rlx.interpret, lambda m, *a: rlx.compile(m)(*a)):
        (jt,), (bu,) = run(jvp_m, x, t), run(bwd_m, x, u)
        np.testing.assert_allclose(np.sum(jt * u), np.sum(t * bu), rtol=1e-12)


def test_max_pool2d_jvp_picks_the_first_maximum_of_a_window():
    m = build("max_pool2d_jvp", {"x": (1, 1, 2, 2), "tx": (1, 1, 2, 2)}, kernel=(2, 2))
    x = np.array([[[[1.0, 3.0], [3.0, 2.0]]]])
    tx = np.array([[[[10.0, 20.0], [30.0, 40.0]]]])
    (got,) = rlx.interpret(m, x, tx)
    assert got.item() == 20.0


def test_max_pool2d_jvp_round_trips_and_verifies():
    text = rlx.to_text(pool_pair_module("max_pool2d_jvp", "overlapping_padded"))
    assert "rlx.max_pool2d_jvp" in text
    assert rlx.to_text(rlx.parse(text)) == text
    with pytest.raises(rlx.RlxError, match="tangent tx must have x's shape"):
        build("max_pool2d_jvp", {"x": (1, 1, 4, 4), "tx": (1, 1, 2, 2)}, kernel=(2, 2))


def test_max_pool2d_jvp_gradient_is_max_pool2d_backward():
    b = rlx.Builder("f")
    x, tx = b.input("x", (1, 2, 5, 5)), b.param("tx", (1, 2, 5, 5))
    b.ret(b.reduce_sum(b.tanh(b.max_pool2d_jvp(x, tx, kernel=(3, 3), stride=(2, 2),
                                               padding=(1, 1))), axes=[0, 1, 2, 3]))
    check_grads(b.module)


# ---------------------------------------------------------------- vmap


def vmap_matches_loop(module, batched, rng, make=None):
    """The interpreter of @f_vmap against a loop of @f over the batched rows."""
    f_args = [a for a in module.body.block.ops][0].body.block.args
    shapes = {a.name_hint: tuple(a.type.get_shape()) for a in f_args}
    rlx.vmap(module, "f", batched, B)
    make = make or (lambda shape: rng.standard_normal(shape))
    args = {n: make(((B,) if n in batched else ()) + s) for n, s in shapes.items()}
    (got,) = rlx.interpret(module, entry="f_vmap", **args)
    assert got.shape[0] == B
    for i in range(B):
        row = {n: v[i] if n in batched else v for n, v in args.items()}
        (want,) = rlx.interpret(module, entry="f", **row)
        np.testing.assert_allclose(got[i], want, rtol=1e-10, atol=1e-12)
    return args


@pytest.mark.parametrize("op,case,batched", params("vmap"))
def test_vmap_matches_a_loop(op, case, batched):
    vmap_matches_loop(OPS[op][0](case), batched, np.random.default_rng(3))


@pytest.mark.parametrize("op", ["max_pool2d", "max_pool2d_backward", "max_pool2d_jvp"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_vmap_of_max_pool_ops_with_ties(op, case):
    module = OPS[op][0](case)
    floats = OPS[op][2]
    rng = np.random.default_rng(4)
    vmap_matches_loop(module, floats, rng, lambda shape: tied_input(rng, shape))


def test_vmap_batched_weight_uses_grouped_conv_not_unroll():
    m = conv_module("groups")
    g = rlx.vmap(m, "f", ["x", "w"], B)
    convs = [op for op in g.body.block.ops if op.name == "rlx.conv2d"]
    assert len(convs) == 1 and convs[0].attributes["groups"].value.data == 2 * B


def test_vmap_of_the_jvp_function():
    """vmap composes with jvp: max_pool2d_jvp and the bilinear conv tangents, batched."""
    b = rlx.Builder("f")
    x, w = b.input("x", (1, 2, 6, 6), "f64"), b.input("w", (3, 2, 3, 3), "f64")
    b.ret(b.max_pool2d(b.conv2d(x, w, padding=(1, 1)), kernel=(2, 2)))
    rlx.jvp(b.module, "f")
    rng = np.random.default_rng(5)
    names = ["x", "w", "tangent_x", "tangent_w"]
    shapes = [(1, 2, 6, 6), (3, 2, 3, 3)] * 2
    args = [rng.standard_normal((B, *s)) for s in shapes]
    rlx.vmap(b.module, "f_jvp", names, B)
    got = rlx.interpret(b.module, *args, entry="f_jvp_vmap")
    for i in range(B):
        want = rlx.interpret(b.module, *(a[i] for a in args), entry="f_jvp")
        for g_, w_ in zip(got, want, strict=True):
            np.testing.assert_allclose(g_[i], w_, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- JIT


def assert_jit_matches_interpreter(module, entry, arrays, rtol=1e-5):
    got = rlx.compile(module, entry=entry)(*arrays)
    want = rlx.interpret(module, *arrays, entry=entry)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("op,case,batched", [
    ("conv2d", "groups", ["x", "w", "b"]),
    ("conv2d", "stride_padding_dilation", ["x"]),
    ("conv2d_backward_input", "groups", ["w"]),
    ("conv2d_backward_weight", "stride_padding_dilation", ["dy"]),
    ("max_pool2d_backward", "overlapping_padded", ["x"]),
])
def test_jit_of_vmap(op, case, batched):
    module = OPS[op][0](case, dtype="f32")
    rlx.vmap(module, "f", batched, B)
    g = [o for o in module.body.block.ops if o.sym_name.data == "f_vmap"][0]
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in g.body.block.args]
    assert_jit_matches_interpreter(module, "f_vmap", arrays)


@pytest.mark.parametrize("op,case", [
    ("conv2d", "groups"), ("max_pool2d", "overlapping_padded"), ("avg_pool2d", "non_square"),
    ("conv2d_backward_weight", "plain"), ("max_pool2d_jvp", "non_square"),
])
def test_jit_of_jvp(op, case):
    module = OPS[op][0](case, dtype="f32")
    g = rlx.jvp(module, "f")
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(a.type.get_shape()).astype(np.float32) for a in g.body.block.args]
    assert_jit_matches_interpreter(module, "f_jvp", arrays)
