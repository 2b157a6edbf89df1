"""Forward over reverse through scans: the JVP rules of ``rlx.scan_backward(_xs)``.

``jvp(grad(f))`` of scan losses (checkpointed or not) against central differences (f64),
and the Hessian-vector product of a small RNN against PyTorch, interpreted and native.
"""

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.lowering import lower_module
from rlx_mlir.testing import check_jvp

LENGTH, BATCH, HIDDEN, INPUT = 6, 2, 4, 3
PARAMS = ("h0", "w", "u", "c")
SHAPES = {"h0": (BATCH, HIDDEN), "xs": (LENGTH, BATCH, INPUT), "w": (HIDDEN, HIDDEN),
          "u": (INPUT, HIDDEN), "c": (HIDDEN,)}


def rnn_loss(k=0, trajectory=False, xs_param=False):
    """``h <- tanh(h @ w + x_t @ u + c)`` over ``LENGTH`` steps; the mean square of the
    final carry (or of the stored trajectory)."""
    b = rlx.Builder("f")
    h0, xs, w, u, c = ((b.input if n == "xs" and not xs_param else b.param)(n, s, "f64")
                       for n, s in SHAPES.items())
    out = b.scan(h0, lambda b, h, w, u, c, x: b.tanh(h @ w + x @ u + c), length=LENGTH,
                 xs=[xs], bcasts=[w, u, c], num_checkpoints=k, save_trajectory=trajectory)
    b.ret(b.reduce_mean(out * out, axes=list(range(out.ndim))))
    rlx.grad_with_loss(b.module, "f")
    return b.module


def ops_named(module, name):
    return [op for op in module.walk() if op.name == name]


@pytest.mark.parametrize("k", [0, 2, LENGTH])
@pytest.mark.parametrize("trajectory", [False, True])
def test_jvp_of_rnn_gradient_matches_finite_differences(k, trajectory):
    m = rnn_loss(k, trajectory, xs_param=True)
    report = check_jvp(m, "f_grad")
    assert len(report.args) == 6 and report.ok   # loss, d h0, d xs, d w, d u, d c
    g = rlx.jvp(m, "f_grad")
    sweeps = ops_named(g, "rlx.scan_backward") + ops_named(g, "rlx.scan_backward_xs")
    assert {op.attr("num_checkpoints", 0) for op in sweeps} == {k}
    assert all(len(op.bodies) == (2 if k == 2 else 1) for op in sweeps)


def test_jvp_of_gradient_along_xs_only():
    """Tangents on the per-step inputs alone: the carry and trajectory tangents come from
    the forward scan's JVP, and the d xs tangent from ``scan_backward_xs``."""
    check_jvp(rnn_loss(3, xs_param=True), "f_grad", wrt=["xs"])


def test_jvp_along_the_cotangent_is_the_sweep_itself():
    """``scan_backward`` is linear in its upstream cotangent: no pair sweep is built."""
    m = rnn_loss(2)
    check_jvp(m, "f_grad", wrt=["d_output"])
    g = rlx.jvp(m, "f_grad", wrt=["d_output"])
    sweeps = ops_named(g, "rlx.scan_backward") + ops_named(g, "rlx.scan_backward_xs")
    assert {tuple(op.init.type.get_shape()) for op in sweeps} == {(BATCH, HIDDEN)}


def test_jvp_of_nested_scan_gradient():
    """A scan inside a scan body: the JVP rule recurses into the sweep's regions; the
    constant shared by the bodies and the function must not be hoisted out of the regions."""
    b = rlx.Builder("f")
    x0, xs = b.param("x0", (3,), "f64"), b.param("xs", (4, 3), "f64")

    def outer(b, h, x):
        return b.scan(h, lambda b, d, v: b.sin(d) * v + d * 0.5, length=3, bcasts=[x],
                      num_checkpoints=2)

    out = b.scan(x0 * 0.5, outer, length=4, xs=[xs], num_checkpoints=2)
    b.ret(b.reduce_sum(out * out, axes=[0]))
    rlx.grad_with_loss(b.module, "f")
    check_jvp(b.module, "f_grad")


def torch_hvp(args, tangents):
    xs = torch.tensor(args["xs"])

    def loss(h, w, u, c):
        for t in range(LENGTH):
            h = torch.tanh(h @ w + xs[t] @ u + c)
        return (h * h).mean()

    primals = tuple(torch.tensor(args[n]) for n in PARAMS)
    _, hvp = torch.func.jvp(torch.func.grad(loss, argnums=(0, 1, 2, 3)), primals,
                            tuple(torch.tensor(tangents[n]) for n in PARAMS))
    return [h.numpy() for h in hvp]


@pytest.mark.parametrize("k", [0, 3])
def test_rnn_hessian_vector_product_matches_torch(k):
    rng = np.random.default_rng(k)
    m = rnn_loss(k)
    rlx.jvp(m, "f_grad", wrt=list(PARAMS))
    args = {n: rng.standard_normal(s) * 0.5 for n, s in SHAPES.items()}
    tangents = {n: rng.standard_normal(SHAPES[n]) for n in PARAMS}
    flat = [*args.values(), np.float64(1.0), *tangents.values()]
    want = torch_hvp(args, tangents)
    interpreted = rlx.interpret(m, *flat, entry="f_grad_jvp")[-4:]
    native = rlx.compile(m, entry="f_grad_jvp")(*flat)[-4:]
    for got in (interpreted, native):
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
            assert np.abs(w).max() > 1e-3


def test_checkpointed_hvp_keeps_k_rows():
    """The lowered HVP of a 2-checkpoint scan holds [2, ...] (pair) trajectories and never
    a [length, ...] carry or carry-pair tensor."""
    m = rnn_loss(2)
    g = rlx.jvp(m, "f_grad", wrt=list(PARAMS))
    lower_module(m)
    shapes = {tuple(v.type.get_shape()) for op in g.walk() for v in op.results
              if hasattr(v.type, "get_shape")}
    assert (2, 2, BATCH, HIDDEN) in shapes
    assert not shapes & {(LENGTH, BATCH, HIDDEN), (LENGTH, 2, BATCH, HIDDEN)}


def test_vmap_of_hvp_over_directions():
    """A batch of Hessian-vector products (vmap over the tangent of ``w``) equals one HVP
    per direction: the paired sweeps batch like any scan_backward."""
    rng = np.random.default_rng(5)
    m = rnn_loss(2)
    rlx.jvp(m, "f_grad", wrt=list(PARAMS))
    rlx.vmap(m, "f_grad_jvp", ["tangent_w"], 3)
    args = [rng.standard_normal(s) for s in SHAPES.values()] + [np.float64(1.0)]
    tangents = [rng.standard_normal((3, *SHAPES[n]) if n == "w" else SHAPES[n]) for n in PARAMS]
    batched = rlx.interpret(m, *args, *tangents, entry="f_grad_jvp_vmap")
    for i in range(3):
        one = rlx.interpret(m, *args, tangents[0], tangents[1][i], *tangents[2:],
                            entry="f_grad_jvp")
        for got, want in zip(batched, one, strict=True):
            np.testing.assert_allclose(got[i], want, rtol=1e-12, atol=1e-14)
