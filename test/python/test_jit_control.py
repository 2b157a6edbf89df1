"""The JIT against the interpreter on the control family (scan, if, while, custom_fn) and
on the gradients of such losses (scan_backward / scan_backward_xs, checkpointed or not)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.lowering import lower_module, lower_to_llvm
from rlx_mlir.runtime.jit import compile as jit_compile
from rlx_mlir.testing import promote_to_f64

RTOL = {"f32": 1e-5, "f64": 1e-12}
NP = {"f32": np.float32, "f64": np.float64}
MLIR_OPT = os.path.join(list(__import__("mlir").__path__)[0], "bin", "mlir-opt")




def assert_jit_matches(module, *args, entry=None, dtype="f64"):
    """JIT results == interpreter results (rtol 1e-5 f32, 1e-12 f64)."""
    got = jit_compile(module, entry=entry)(*args)
    want = rlx.interpret(module, *args, entry=entry)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype])
        else:
            np.testing.assert_array_equal(g, w)
    return got


def assert_mlir_opt_verifies(module):
    """``rlx-opt m --lower-to-llvm | mlir-opt`` accepts the LLVM-dialect output."""
    run = subprocess.run([MLIR_OPT], input=lower_to_llvm(module), capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def ops_named(module, name):
    return [op for op in module.walk() if op.name == name]


# ---------------------------------------------------------------- forward scans


def test_scan_geometric_growth_f64():
    b = rlx.Builder("f")
    b.ret(b.scan(b.input("x", (4,), "f64"), lambda b, c: c * 1.1, length=10))
    (out,) = assert_jit_matches(b.module, np.ones(4))
    np.testing.assert_allclose(out, 1.1**10, rtol=1e-14)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_scan_cumulative_sum_with_xs(dtype, rng):
    b = rlx.Builder("f")
    init, xs = b.input("init", (3,), dtype), b.input("xs", (5, 3), dtype)
    b.ret(b.scan(init, lambda b, c, x: c + x, length=5, xs=[xs]))
    i, x = rng.standard_normal(3).astype(NP[dtype]), rng.standard_normal((5, 3)).astype(NP[dtype])
    (out,) = assert_jit_matches(b.module, i, x, dtype=dtype)
    np.testing.assert_allclose(out, i + x.sum(0), rtol=RTOL[dtype])


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_scan_with_bcast_and_xs(dtype, rng):
    b = rlx.Builder("f")
    x0, xs, w = b.input("x0", (2, 3), dtype), b.input("xs", (6, 2, 3), dtype), b.input("w", (3,), dtype)
    b.ret(b.scan(x0, lambda b, c, w, x: b.tanh(c * w + x), length=6, xs=[xs], bcasts=[w]))
    args = [rng.standard_normal(s).astype(NP[dtype]) for s in [(2, 3), (6, 2, 3), (3,)]]
    assert_jit_matches(b.module, *args, dtype=dtype)


def test_trajectory_rows_are_carries_after_each_step():
    b = rlx.Builder("f")
    b.ret(b.scan(b.input("x", (1,), "f64"), lambda b, c: c * 2.0, length=4, save_trajectory=True))
    (out,) = assert_jit_matches(b.module, np.ones(1))
    np.testing.assert_array_equal(out[:, 0], [2, 4, 8, 16])


@pytest.mark.parametrize("length,k", [(6, 2), (7, 3), (4, 3), (5, 5), (9, 1)])
def test_checkpointed_trajectory_rows(length, k, rng):
    b = rlx.Builder("f")
    x, xs = b.input("x", (3,), "f64"), b.input("xs", (length, 3), "f64")
    b.ret(b.scan(x, lambda b, c, u: b.sin(c) + u, length=length, xs=[xs],
                 save_trajectory=True, num_checkpoints=k))
    args = rng.standard_normal(3), rng.standard_normal((length, 3))
    (out,) = assert_jit_matches(b.module, *args)
    assert out.shape == (min(k, length) if k else length, 3)


def test_integer_carry_and_nested_if_in_scan_body():
    """A region op inside a scan body is lowered too (the cloned body's next sweep)."""
    b = rlx.Builder("f")
    n = b.input("n", (2,), "i32")

    def body(b, c, p):
        return b.cond(p, lambda b, v: v * 3, lambda b, v: v + 1, c)

    preds = b.input("p", (4, 1), "i1")
    b.ret(b.scan(n, body, length=4, xs=[preds]))
    p = np.array([[True], [False], [False], [True]])
    (out,) = assert_jit_matches(b.module, np.array([1, -2], np.int32), p)
    np.testing.assert_array_equal(out, [(1 * 3 + 2) * 3, (-2 * 3 + 2) * 3])


# ---------------------------------------------------------------- if / while / custom_fn


@pytest.mark.parametrize("pred", [True, False])
@pytest.mark.parametrize("pred_shape", [(1,), ()])
def test_if_both_branches(pred, pred_shape, rng):
    b = rlx.Builder("f")
    p, x, y = b.input("p", pred_shape, "i1"), b.input("x", (3,)), b.input("y", (3,))
    outs = b.cond(p, lambda b, a, c: (b.relu(a) * c, b.compare(a, c, predicate="lt")),
                  lambda b, a, c: (b.sigmoid(a), b.compare(a, c, predicate="ge")), x, y)
    b.ret(*outs)
    args = np.full(pred_shape, pred), *(rng.standard_normal(3).astype(np.float32) for _ in "xy")
    assert_jit_matches(b.module, *args, dtype="f32")


def while_model(bound=6):
    b = rlx.Builder("f")
    x = b.param("x", (), "f32")
    b.ret(b.while_loop(x, lambda b, s: b.compare(s, b.full((), 5.0), predicate="lt"),
                       lambda b, s: s * 1.5 + 0.25, max_iterations=bound))
    return b.module


@pytest.mark.parametrize("x", [0.3, 2.0, 4.9, 7.0])
def test_while_early_exit(x):
    """Stops when the state reaches 5 (before the bound of 6 steps), or never starts."""
    assert_jit_matches(while_model(), np.float32(x), dtype="f32")


@pytest.mark.parametrize("bound", [0, 1, 3])
def test_while_max_iterations_cutoff(bound):
    (out,) = assert_jit_matches(while_model(bound), np.float32(0.01), dtype="f32")
    expected = np.float32(0.01)
    for _ in range(bound):
        expected = expected * np.float32(1.5) + np.float32(0.25)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_while_without_bound_and_bool_in_state():
    b = rlx.Builder("f")
    x = b.input("x", (2,), "i64")
    b.ret(b.while_loop(x, lambda b, s: b.compare(b.reduce_sum(s, axes=[0]), b.full((), 100, "i64"),
                                                 predicate="lt"),
                       lambda b, s: s * 2 + 1))
    assert_jit_matches(b.module, np.array([1, 2], np.int64))


def test_custom_fn_runs_fwd_body(rng):
    b = rlx.Builder("f")
    x, y = b.input("x", (3,), "f64"), b.input("y", (3,), "f64")
    b.ret(b.custom_fn([x, y], lambda b, a, c: b.sin(a) * c, vjp=lambda b, a, c, o, g: (g, g)))
    assert_jit_matches(b.module, rng.standard_normal(3), rng.standard_normal(3))


# ---------------------------------------------------------------- gradients


def scan_loss(length, k, with_xs=True, with_bcast=True, trajectory=False, dtype="f64"):
    b = rlx.Builder("f")
    x0 = b.param("x0", (3,), dtype)
    xs = [b.param("xs", (length, 3), dtype)] if with_xs else []
    bc = [b.param("w", (3,), dtype)] if with_bcast else []

    def body(b, c, *rest):
        y = c * rest[0] if with_bcast else c * 0.9
        return b.tanh(y + rest[-1]) if with_xs else b.sin(y) + c * 0.5

    out = b.scan(x0, body, length=length, xs=xs, bcasts=bc, num_checkpoints=k,
                 save_trajectory=trajectory)
    b.ret(b.reduce_sum(out * out, axes=list(range(out.ndim))))
    return b.module


def grad_args(module, rng, dtype="f64"):
    f = next(op for op in module.walk() if getattr(op, "sym_name", None)
             and op.sym_name.data == "f")
    shapes = [a.type.get_shape() for a in f.body.block.args]
    return [rng.standard_normal(s).astype(NP[dtype]) for s in shapes] + [NP[dtype](1.0)]


def check_gradient_module(module, rng, dtype="f64", args=None):
    rlx.grad_with_loss(module)
    args = grad_args(module, rng, dtype) if args is None else args
    assert_jit_matches(module, *args, entry="f_grad", dtype=dtype)
    assert_mlir_opt_verifies(module)
    return module


@pytest.mark.parametrize("length,k", [(6, 0), (6, 2), (9, 3), (16, 4), (7, 7)])
@pytest.mark.parametrize("with_xs,with_bcast", [(True, True), (True, False), (False, True),
                                                 (False, False)])
def test_scan_gradient(length, k, with_xs, with_bcast, rng):
    m = check_gradient_module(scan_loss(length, k, with_xs, with_bcast), rng)
    assert ops_named(m, "rlx.scan_backward")
    assert bool(ops_named(m, "rlx.scan_backward_xs")) == (with_xs or with_bcast)


@pytest.mark.parametrize("k", [0, 2, 3])
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_trajectory_scan_gradient(k, dtype, rng):
    check_gradient_module(scan_loss(6, k, trajectory=True, dtype=dtype), rng, dtype)


def test_long_checkpointed_scan_gradient_matches_interpreter(rng):
    b = rlx.Builder("f")
    x, xs = b.param("x", (2,), "f64"), b.param("xs", (200, 2), "f64")
    c = b.scan(x, lambda b, c, u: c + 0.01 * b.sin(c + u), length=200, xs=[xs],
               num_checkpoints=14)
    b.ret(b.reduce_sum(c * c, axes=[0]))
    check_gradient_module(b.module, rng)


def if_loss():
    b = rlx.Builder("f")
    p, x = b.input("p", (1,), "i1"), b.param("x", (3,))
    y = b.cond(p, lambda b, a: b.relu(a) * a, lambda b, a: b.sigmoid(a), x)
    b.ret(b.reduce_sum(y, axes=[0]))
    return promote_to_f64(b.module)


@pytest.mark.parametrize("pred", [True, False])
def test_if_gradient(pred, rng):
    args = [np.array([pred]), rng.standard_normal(3), 1.0]
    check_gradient_module(if_loss(), rng, args=args)


@pytest.mark.parametrize("x", [0.3, 4.9, 7.0])
def test_while_gradient(x, rng):
    m = promote_to_f64(while_model())
    check_gradient_module(m, rng, args=[np.array(x), 1.0])


@pytest.mark.parametrize("with_vjp", [True, False])
def test_custom_fn_gradient(with_vjp, rng):
    b = rlx.Builder("f")
    x, w = b.param("x", (3,), "f64"), b.param("w", (3,), "f64")
    vjp = (lambda b, a, c, y, g: (g * b.cos(a) * c, g * b.sin(a))) if with_vjp else None
    y = b.custom_fn([x, w], lambda b, a, c: b.sin(a) * c, vjp=vjp)
    b.ret(b.reduce_sum(y * y, axes=[0]))
    check_gradient_module(b.module, rng)


def test_scan_of_custom_fn_gradient(rng):
    """A custom_fn (with its vjp) inside a scan body: nested regions through the VJP."""
    b = rlx.Builder("f")
    x, xs = b.param("x", (3,), "f64"), b.param("xs", (5, 3), "f64")

    def body(b, c, u):
        return b.custom_fn([c, u], lambda b, p, q: b.tanh(p + q),
                           vjp=lambda b, p, q, y, g: (g * (1.0 - y * y), g * (1.0 - y * y)))

    c = b.scan(x, body, length=5, xs=[xs], num_checkpoints=2)
    b.ret(b.reduce_sum(c, axes=[0]))
    check_gradient_module(b.module, rng)


# ---------------------------------------------------------------- lowered IR


def test_lowered_scan_is_an_scf_loop_without_rlx_ops():
    m = scan_loss(6, 2)
    rlx.grad_with_loss(m)
    lower_module(m)
    assert not [op for op in m.walk() if op.name.startswith("rlx.")]
    assert len(ops_named(m, "scf.for")) >= 4  # forward, two reverse sweeps, recomputation


def test_checkpointed_backward_keeps_k_rows(rng):
    """The backward pass of a K-checkpointed scan never builds a [length, ...] carry tensor."""
    m = scan_loss(12, 3, with_xs=False, with_bcast=False)
    rlx.grad_with_loss(m)
    lower_module(m)
    shapes = {tuple(v.type.get_shape()) for op in m.walk() for v in op.results
              if hasattr(v.type, "get_shape")}
    assert (3, 3) in shapes and (12, 3) not in shapes


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
