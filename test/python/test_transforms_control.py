"""jvp and vmap through scans, if, while and custom_fn."""

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.testing import check_jvp


def scan_model(k=0, save=False):
    b = rlx.Builder("f")
    x0, xs, w = b.param("x0", (3,)), b.param("xs", (5, 3)), b.param("w", (3,))
    out = b.scan(x0, lambda b, c, w, x: b.tanh(c * w + x), length=5, xs=[xs], bcasts=[w],
                 num_checkpoints=k, save_trajectory=save)
    b.ret(out)
    return b.module


def branch_model():
    b = rlx.Builder("f")
    p, x = b.input("p", (), "i1"), b.param("x", (3,))
    b.ret(b.cond(p, lambda b, a: b.sin(a) * a, lambda b, a: b.exp(a), x))
    return b.module


def loop_model():
    b = rlx.Builder("f")
    x = b.param("x", (2,))
    b.ret(b.while_loop(x, lambda b, s: b.compare(b.reduce_sum(s, axes=[0]), b.full((), 4.0),
                                                  predicate="lt"),
                       lambda b, s: s * 1.5 + 0.1, max_iterations=6))
    return b.module


def custom_model(with_jvp):
    b = rlx.Builder("f")
    x = b.param("x", (3,))
    jvp = (lambda b, a, t: t * 2.0) if with_jvp else None
    b.ret(b.custom_fn([x], lambda b, a: a * a, jvp=jvp))
    return b.module


@pytest.mark.parametrize("k,save", [(0, False), (2, False), (0, True), (2, True)])
def test_scan_jvp(k, save):
    check_jvp(scan_model(k, save))


def test_if_and_while_jvp():
    check_jvp(branch_model(), args={"p": np.array(True)})
    check_jvp(branch_model(), args={"p": np.array(False)})
    check_jvp(loop_model(), args={"x": np.array([0.2, 0.5])})


def test_custom_fn_jvp_region_overrides_natural_tangent():
    m = custom_model(with_jvp=True)
    rlx.jvp(m, "f")
    _, t = rlx.interpret(m, np.ones(3, np.float32), np.ones(3, np.float32), entry="f_jvp")
    np.testing.assert_array_equal(t, [2, 2, 2])   # the region says 2t, not 2x t
    check_jvp(custom_model(with_jvp=False))


def loop_over_rows(m, batched, args, size):
    outs = rlx.interpret(m, entry="f_vmap", **args)
    for i in range(size):
        row = {n: v[i] if n in batched else v for n, v in args.items()}
        for got, want in zip(outs, rlx.interpret(m, entry="f", **row), strict=True):
            np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batched", [["x0"], ["xs"], ["w"], ["x0", "xs", "w"]])
@pytest.mark.parametrize("k,save", [(0, False), (2, True)])
def test_scan_vmap_matches_loop(batched, k, save):
    m = scan_model(k, save)
    rlx.vmap(m, "f", batched, 3)
    rng = np.random.default_rng(0)
    shapes = {"x0": (3,), "xs": (5, 3), "w": (3,)}
    args = {n: rng.standard_normal(((3,) if n in batched else ()) + s).astype(np.float32)
            for n, s in shapes.items()}
    loop_over_rows(m, batched, args, 3)


def test_if_while_custom_fn_vmap():
    rng = np.random.default_rng(1)
    m = branch_model()
    rlx.vmap(m, "f", ["p", "x"], 4)
    loop_over_rows(m, ["p", "x"], {"p": np.array([True, False, True, False]),
                                   "x": rng.standard_normal((4, 3)).astype(np.float32)}, 4)
    m = loop_model()
    rlx.vmap(m, "f", ["x"], 3)
    loop_over_rows(m, ["x"], {"x": np.array([[0.1, 0.2], [1.0, 2.0], [3.0, 3.0]],
                                            np.float32)}, 3)
    m = custom_model(with_jvp=True)
    rlx.vmap(m, "f", ["x"], 2)
    loop_over_rows(m, ["x"], {"x": rng.standard_normal((2, 3)).astype(np.float32)}, 2)


@pytest.mark.parametrize("k", [0, 2])
def test_vmap_of_grad_scan_matches_per_row_runs(k):
    """SPEC 8: vmap(grad_with_loss(scan)) over init equals independent per-row runs."""
    b = rlx.Builder("f")
    x0, xs = b.param("x0", (3,)), b.input("xs", (6, 3))
    out = b.scan(x0, lambda b, c, x: b.tanh(c * 0.9 + x), length=6, xs=[xs], num_checkpoints=k)
    b.ret(b.reduce_sum(out * out, axes=[0]))
    m = b.module
    rlx.grad_with_loss(m, "f")
    rlx.vmap(m, "f_grad", ["x0", "xs"], 3)
    rng = np.random.default_rng(2)
    args = {"x0": rng.standard_normal((3, 3)).astype(np.float32),
            "xs": rng.standard_normal((3, 6, 3)).astype(np.float32)}
    outs = rlx.interpret(m, entry="f_grad_vmap", **args, d_output=np.float32(1))
    for i in range(3):
        want = rlx.interpret(m, entry="f_grad", x0=args["x0"][i], xs=args["xs"][i],
                             d_output=np.float32(1))
        for got, w in zip(outs, want, strict=True):
            np.testing.assert_allclose(got[i], w, rtol=1e-5, atol=1e-6)
