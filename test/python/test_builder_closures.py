"""The builder API's region bodies may use tensors of the enclosing builder: Builder.scan
makes each a broadcast input (after ``bcasts``) and Builder.cond a captured operand of both
branches, so the regions stay closed. Checked by gradients (finite differences) and by the
interpreter against native code."""

from __future__ import annotations

import numpy as np

import rlx_mlir as rlx
from rlx_mlir.ir import to_text
from rlx_mlir.testing import check_grads

RNG = np.random.default_rng(9)


def rnn_module(nested: bool = False):
    b = rlx.Builder("f")
    h0 = b.param("h0", (2, 3), "f64")
    w = b.param("w", (3, 3), "f64")
    u = b.param("u", (3,), "f64")
    xs = b.input("xs", (4, 2, 3), "f64")

    def step(bb, h, x):
        if nested:  # an inner scan over two sub-steps, also closing over w and x
            return bb.scan(h, lambda bi, g: bi.tanh(g @ w + x), length=2)
        return bb.tanh(h @ w + x * u)

    out = b.scan(h0, step, length=4, xs=[xs])
    b.ret(b.reduce_sum(out * out, axes=[0, 1]))
    return b.module


def test_scan_body_closing_over_weights_makes_them_broadcast_inputs():
    m = rnn_module()
    text = to_text(m)
    assert "rlx.scan %h0, %w, %u, %xs {length = 4 : i64, num_xs = 1 : i64}" in text
    check_grads(m, "f", args={"xs": RNG.standard_normal((4, 2, 3))})


def test_nested_scans_capture_through_both_levels():
    m = rnn_module(nested=True)
    args = {"h0": RNG.standard_normal((2, 3)), "w": 0.5 * RNG.standard_normal((3, 3)),
            "u": RNG.standard_normal(3), "xs": RNG.standard_normal((4, 2, 3))}
    want = rlx.interpret(m, **args)
    got = rlx.compile(m, "f")(**args)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    check_grads(m, "f", wrt=["h0", "w"], args={"xs": args["xs"]})


def test_cond_branches_closing_over_tensors_capture_them_for_both():
    b = rlx.Builder("f")
    x = b.param("x", (3,), "f64")
    w = b.param("w", (3,), "f64")
    v = b.param("v", (3,), "f64")
    pred = b.reshape(b.compare(b.reduce_sum(x, axes=[0]), b.full((), 0.0, "f64"),
                               predicate="gt"), (1,))
    y = b.cond(pred, lambda bb, a: bb.tanh(a * w), lambda bb, a: a * v - w, x)
    b.ret(b.reduce_sum(y * y, axes=[0]))
    m = b.module
    for sign in (1.0, -1.0):
        args = {"x": sign * np.abs(RNG.standard_normal(3)), "w": RNG.standard_normal(3),
                "v": RNG.standard_normal(3)}
        np.testing.assert_allclose(rlx.compile(m, "f")(**args), rlx.interpret(m, **args),
                                   rtol=1e-12)
        check_grads(m, "f", args=args)
