"""rlx.scan / rlx.cond / rlx.while_loop / rlx.fori_loop in traced functions against
jax.lax (float64, natively compiled): values, gradients through closed-over weights (also
against finite differences), vmap, jvp, nesting, eager calls and the emitted IR."""

from __future__ import annotations

import pathlib
import re
from collections.abc import Callable
from typing import Any

import jax
import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir import RlxError

jnp = jax.numpy
lax = jax.lax

RNG = np.random.default_rng(7)
W = 0.5 * RNG.normal(size=(3, 3))
V = RNG.normal(size=3)
H0 = RNG.normal(size=3)
XS = RNG.normal(size=(5, 3))
YS = RNG.normal(size=(2, 4, 3))
HB = RNG.normal(size=(4, 3))
XB = RNG.normal(size=(4, 5, 3))

pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)

# The same model written twice: ``lib`` is rlx.nn or jax.numpy, ``c`` rlx or jax.lax.
RLX = (rlx.nn, rlx)
JAX = (jnp, lax)


def close(got: Any, want: Any, rtol: float = 1e-11, atol: float = 1e-13) -> None:
    """Equal pytrees: same structure, dtypes of the same kind, values to rounding."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype.kind == w.dtype.kind
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def both(make: Callable, transform: Callable[[Callable], Callable] = lambda f: f,
         jax_transform: Callable[[Callable], Callable] | None = None):
    """``make(lib, c)`` built for rlx and for JAX, each under its own transformation."""
    jax_transform = jax_transform or transform
    return transform(make(*RLX)), jax_transform(make(*JAX))


def check(make: Callable, *args: Any, grad_argnums: tuple[int, ...] | None = None) -> None:
    """The natively compiled value (and gradient) match JAX's."""
    ours, theirs = both(make, rlx.jit, jax.jit)
    close(ours(*args), theirs(*args))
    if grad_argnums is not None:
        ours, theirs = both(make, lambda f: rlx.grad(f, argnums=grad_argnums),
                            lambda f: jax.grad(f, argnums=grad_argnums))
        close(ours(*args), theirs(*args), rtol=1e-10, atol=1e-12)


def finite_difference(f: Callable, args: tuple, argnum: int, eps: float = 1e-6) -> np.ndarray:
    """Central differences of the scalar ``f`` w.r.t. ``args[argnum]``."""
    x = np.array(args[argnum], dtype=np.float64)
    grad = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        at = lambda v: float(f(*args[:argnum], v, *args[argnum + 1:]))  # noqa: E731
        grad[i] = (at(up) - at(down)) / (2 * eps)
    return grad


def text(fn: Callable, *args: Any) -> str:
    return rlx.jit(fn).lower(*args).as_text()


# ---------------------------------------------------------------- scan


def rnn(lib, c):
    """An RNN over xs closing over the weight w; ys are the hidden states."""
    def loss(w, h0, xs):
        h, hs = c.scan(lambda h, x: (lib.tanh(h @ w + x),) * 2, h0, xs)
        return h.sum() + (hs * hs).sum()
    return loss


def test_scan_closing_over_a_weight_matches_jax():
    check(rnn, W, H0, XS, grad_argnums=(0, 1, 2))


def test_scan_gradient_of_the_closed_over_weight_matches_finite_differences():
    loss = rlx.jit(rnn(*RLX))
    np.testing.assert_allclose(rlx.grad(rnn(*RLX))(W, H0, XS),
                               finite_difference(loss, (W, H0, XS), 0), rtol=1e-6, atol=1e-8)


def test_scan_ir_passes_the_closure_as_a_broadcast_operand_and_stores_ys_once():
    """The weight becomes a broadcast operand of rlx.scan; ``return h, h`` is a trajectory
    scan of the carry itself (no packing)."""
    ir = text(rnn(*RLX), W, H0, XS)
    assert "rlx.scan %h0, %w, %xs {length = 5 : i64, num_xs = 1 : i64, save_trajectory = true}" in ir
    assert "rlx.concat" not in ir and "captured" not in ir


def test_scan_gradient_sums_the_closed_over_weight_without_copying_it_per_step():
    """The gradient keeps the weight a broadcast operand: scan_backward_xs accumulates its
    gradient over the steps; no [length, 3, 3] copy of it or of its gradient exists."""
    ir = text(rlx.grad(rnn(*RLX)), W, H0, XS)
    assert re.search(r"rlx.scan_backward_xs .*num_bcast = 1 : i64\} : \(.*\) -> "
                     r"tensor<3x3xf64>", ir)
    assert "tensor<5x3x3xf64>" not in ir


def test_scan_pytree_carry_pytree_ys_and_reverse_match_jax():
    def make(lib, c):
        def loss(w, h0, xs):
            def step(carry, x):
                h = lib.tanh(carry["h"] @ w + x["a"] * x["b"])
                return {"h": h, "s": carry["s"] + h.sum()}, (h * 2.0, h.sum())
            carry, (ys, sums) = c.scan(step, {"h": h0, "s": h0.sum() * 0.0},
                                       {"a": xs, "b": xs * xs}, reverse=True)
            return carry["s"] + (ys * ys).sum() + (sums * sums).sum()
        return loss

    check(make, W, H0, XS, grad_argnums=(0, 1, 2))


def test_scan_returns_carry_and_ys_pytrees_like_jax():
    def make(lib, c):
        return lambda w, xs: c.scan(lambda s, x: ((s[0] + x, s[1] * 2.0), {"y": s[0] @ w}),
                                    (xs[0], 1.0), xs)
    check(make, W, XS)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_scan_with_an_int_and_float_carry_and_the_previous_carry_as_ys(dtype):
    """Mixed leaves are packed into one f64 vector (exact for i32 and f32)."""
    def make(lib, c):
        def loss(w, h0, xs):
            (n, h), prev = c.scan(lambda s, x: ((s[0] + 1, lib.tanh(s[1] @ w + x) * s[0]), s[1]),
                                  (1, h0), xs)
            return (h * n).sum() + (prev ** 2).sum()
        return loss

    args = [a.astype(dtype) for a in (W, H0, XS)]
    ours, theirs = both(make, lambda f: rlx.value_and_grad(f, argnums=(0, 1, 2)),
                        lambda f: jax.value_and_grad(f, argnums=(0, 1, 2)))
    tol = 1e-11 if dtype == np.float64 else 2e-5
    close(ours(*args), theirs(*args), rtol=tol, atol=tol)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_checkpointed_scan_gradient_matches_jax(k):
    def make(lib, c):
        kw = {"num_checkpoints": k} if c is rlx else {}
        return lambda w, h0, xs: c.scan(lambda h, x: (lib.tanh(h @ w + x), None),
                                        h0, xs, **kw)[0].sum()
    check(make, W, H0, XS, grad_argnums=(0, 1, 2))
    assert f"num_checkpoints = {k}" in text(make(*RLX), W, H0, XS)


def test_scan_with_length_only_python_init_and_numpy_closure():
    def make(lib, c):
        ramp = np.arange(3.0)
        return lambda w: c.scan(lambda s, _: (s * 0.5 + (w * ramp).sum(), s), 1.0, None,
                                length=4)
    w = W.astype(np.float32)
    ours, theirs = rlx.jit(make(*RLX))(w), make(*JAX)(w)
    assert ours[0].dtype == np.float32  # a Python float is f32, as in JAX without x64
    close(ours, jax.tree.map(lambda a: np.asarray(a, np.float32), theirs), rtol=1e-6)


def test_nested_scans_close_over_the_outer_weight():
    def make(lib, c):
        def loss(w, h, ys):
            def outer(h, xs):
                h2, _ = c.scan(lambda g, x: (lib.tanh(g @ w + x), None), h, xs)
                return h2 * 0.5, h2.sum()
            h, sums = c.scan(outer, h, ys)
            return h.sum() + sums.sum()
        return loss

    check(make, W, H0, YS, grad_argnums=(0, 1, 2))


def test_a_loop_body_returning_an_inner_loops_carry_as_is():
    """The inner loop's result is the outer carry itself (no op in between): it is
    already in the outer loop's buffer, as One-Shot Bufferize needs."""
    def make(lib, c):
        def loss(w, h, xs):
            def outer(h, x):
                h, _ = c.scan(lambda g, _: (lib.tanh(g @ w + x), None), h, None, length=2)
                return h, None
            h, _ = c.scan(outer, h, xs)
            h = c.fori_loop(0, 2, lambda i, g: c.scan(
                lambda a, x: (lib.tanh(a + x), None), g, xs)[0], h)
            return (h ** 2).sum()
        return loss

    check(make, W, H0, XS, grad_argnums=(0, 1, 2))


def test_grad_inside_a_scan_body_closes_over_both_traces():
    """An inner optimisation loop: each step is a gradient step of a closure over w (the
    outer trace) and x (the scan body)."""
    def make(lib, c):
        grad = rlx.grad if c is rlx else jax.grad

        def loss(w, h, xs):
            def step(h, x):
                return h - 0.1 * grad(lambda h: ((h @ w - x) ** 2).sum())(h), None
            return (c.scan(step, h, xs)[0] ** 2).sum()
        return loss

    check(make, W, H0, XS, grad_argnums=(0, 1))


# ---------------------------------------------------------------- cond


def gated(lib, c):
    def loss(w, v, x):
        y = c.cond(x.sum() > 0, lambda a: lib.tanh(a @ w), lambda a: a * v + 1.0, x)
        return (y * y).sum()
    return loss


@pytest.mark.parametrize("x", [V, -np.abs(V)], ids=["true", "false"])
def test_cond_with_closures_in_each_branch_matches_jax(x):
    check(gated, W, V, x, grad_argnums=(0, 1, 2))


def test_cond_gradient_of_the_closed_over_weight_matches_finite_differences():
    loss = rlx.jit(gated(*RLX))
    np.testing.assert_allclose(rlx.grad(gated(*RLX))(W, V, V),
                               finite_difference(loss, (W, V, V), 0), rtol=1e-6, atol=1e-8)


def test_cond_ir_passes_every_branch_closure_as_an_operand():
    ir = text(gated(*RLX), W, V, V)
    assert "rlx.if %" in ir and ir.count("^bb0(%") == 2
    assert "captured" not in ir


@pytest.mark.parametrize("x", [V, -np.abs(V)], ids=["true", "false"])
def test_nullary_cond_returning_a_pytree_with_a_python_number(x):
    def make(lib, c):
        return lambda w, x: c.cond(x.sum() > 0, lambda: ((x @ w).sum(), x),
                                   lambda: (0.0, x * 2.0))
    check(make, W, x)


def test_cond_inside_scan_matches_jax():
    def make(lib, c):
        def loss(w, h0, xs):
            def step(h, x):
                h = c.cond(x.sum() > 0, lambda h: lib.tanh(h @ w + x), lambda h: h * 0.5 - x, h)
                return h, None
            return c.scan(step, h0, xs)[0].sum()
        return loss

    check(make, W, H0, XS, grad_argnums=(0, 1, 2))


@pytest.mark.parametrize("x", [V, -np.abs(V)], ids=["true", "false"])
def test_scan_inside_cond_matches_jax(x):
    def make(lib, c):
        return lambda w, x: c.cond(
            x.sum() > 0, lambda a: c.scan(lambda h, y: (lib.tanh(h @ w + y), None), a, XS)[0],
            lambda a: a, x).sum()
    check(make, W, x, grad_argnums=(0, 1))


# ---------------------------------------------------------------- while_loop / fori_loop


def test_while_loop_with_a_mixed_int_float_state_matches_jax():
    def make(lib, c):
        return lambda x: c.while_loop(lambda s: s[0] < 7,
                                      lambda s: (s[0] + 1, s[1] * 1.5 + lib.tanh(x)), (0, x))
    check(make, V)


def test_while_loop_closing_over_a_tensor_inside_scan_matches_jax():
    def make(lib, c):
        return lambda w, h: c.scan(lambda h, y: (c.while_loop(
            lambda s: s.sum() < 10.0, lambda s: s + lib.tanh(w[0]) + 1.0, h + y), None), h, XS)[0]
    check(make, W, H0)


def test_while_loop_gradient_with_max_iterations_matches_a_masked_jax_loop():
    def ours(x):
        return rlx.while_loop(lambda s: s.sum() < 5.0, lambda s: s * 1.5 + 0.1, x,
                              max_iterations=20).sum()

    def theirs(x):
        step = lambda i, s: jnp.where(s.sum() < 5.0, s * 1.5 + 0.1, s)  # noqa: E731
        return lax.fori_loop(0, 20, step, x).sum()

    x = np.abs(V) + 0.1
    close(rlx.jit(ours)(x), theirs(x))
    close(rlx.grad(ours)(x), jax.grad(theirs)(x))


def test_fori_loop_with_int_bounds_is_a_differentiable_scan():
    def make(lib, c):
        return lambda w, x: c.fori_loop(1, 5, lambda i, h: lib.tanh(h @ w) * i + i, x).sum()
    check(make, W, V, grad_argnums=(0, 1))
    ir = text(make(*RLX), W, V)
    assert "rlx.scan" in ir and "rlx.while" not in ir


def test_fori_loop_with_traced_bounds_is_a_while_loop():
    def make(lib, c):
        return lambda n, x: c.fori_loop(0, n, lambda i, h: h * 1.1 + i, x)
    check(make, np.int32(5), V)
    assert "rlx.while" in text(make(*RLX), np.int32(5), V)


def test_fori_loop_with_an_empty_range_returns_init():
    close(rlx.jit(lambda x: rlx.fori_loop(3, 3, lambda i, h: h * 2.0, x))(V), V)


# ---------------------------------------------------------------- vmap, jvp, eager, builder


def test_vmap_of_scan_over_the_carry_and_xs_and_over_the_weight():
    def make(lib, c):
        return lambda w, h0, xs: c.scan(lambda h, x: (lib.tanh(h @ w + x), h.sum()), h0, xs)
    ours, theirs = both(make, lambda f: rlx.vmap(f, in_axes=(None, 0, 0)),
                        lambda f: jax.vmap(f, in_axes=(None, 0, 0)))
    close(ours(W, HB, XB), theirs(W, HB, XB))
    ours, theirs = both(make, lambda f: rlx.vmap(f, in_axes=(0, None, None)),
                        lambda f: jax.vmap(f, in_axes=(0, None, None)))
    close(ours(np.stack([W, 2 * W]), H0, XS), theirs(np.stack([W, 2 * W]), H0, XS))


def test_vmap_of_grad_of_scan_gives_per_example_gradients():
    def make(lib, c):
        return lambda w, h: c.scan(lambda h, x: (lib.tanh(h @ w + x), None), h, XS)[0].sum()
    ours, theirs = both(make, lambda f: rlx.vmap(rlx.grad(f), in_axes=(None, 0)),
                        lambda f: jax.vmap(jax.grad(f), in_axes=(None, 0)))
    close(ours(W, HB), theirs(W, HB))


def test_vmap_of_cond_selects_per_example():
    ours, theirs = both(gated, lambda f: rlx.vmap(f, in_axes=(None, None, 0)),
                        lambda f: jax.vmap(f, in_axes=(None, None, 0)))
    close(ours(W, V, HB), theirs(W, V, HB))


def test_vmap_of_while_loop_with_or_without_a_bound_matches_jax():
    """Bounded: unrolled with a mask per element; unbounded: one loop running while any
    element's condition holds (JAX's batching of while_loop)."""
    def make(lib, c, **kw):
        return lambda x: c.while_loop(lambda s: s.sum() < 5.0, lambda s: s * 1.5, x, **kw)
    x = np.abs(HB) + 0.1
    close(rlx.vmap(make(*RLX, max_iterations=30))(x), jax.vmap(make(*JAX))(x))
    close(rlx.vmap(make(*RLX))(x), jax.vmap(make(*JAX))(x))
    close(rlx.jit(rlx.vmap(make(*RLX)))(x), jax.vmap(make(*JAX))(x))


def test_grad_of_an_unbounded_while_loop_is_a_clear_error():
    loop = lambda x: rlx.while_loop(lambda s: s.sum() < 5.0, lambda s: s * 1.5, x)  # noqa: E731
    with pytest.raises(RlxError, match="needs a max_iterations"):
        rlx.grad(lambda x: loop(x).sum())(np.abs(HB[0]) + 0.1)


def test_jvp_through_scan_with_a_closure_matches_jax():
    def make(lib, c):
        return lambda w: c.scan(lambda h, x: (lib.tanh(h @ w + x), None), H0, XS)[0]
    ours, theirs = both(make)
    close(rlx.jvp(ours, (W,), (np.ones_like(W),)), jax.jvp(theirs, (W,), (np.ones_like(W),)))


def newton_sqrt(lib, c):
    """A data-dependent number of iterations: Newton's method for sqrt(a)."""
    return lambda a: c.while_loop(lambda x: abs(x * x - a).max() > 1e-13,
                                  lambda x: 0.5 * (x + a / x), a)


def test_jvp_of_an_unbounded_while_loop_matches_jax():
    """JAX's rule: one loop over (state, tangent), cond on the state; nothing unrolled,
    no max_iterations. A closed-over weight brings its tangent into the body."""
    def make(lib, c):
        def f(x, w):
            body = lambda s: (lib.tanh(s[0] @ w) + 0.1 * x, s[1] + 1)  # noqa: E731
            return c.while_loop(lambda s: s[1] < 7, body, (x, 0))[0]
        return f
    ours, theirs = both(make)
    x, w = V[:3], W
    for tx, tw in [(np.ones(3), np.zeros_like(w)), (np.zeros(3), np.ones_like(w)),
                   (V, W.T)]:
        close(rlx.jvp(ours, (x, w), (tx, tw)), jax.jvp(theirs, (x, w), (tx, tw)))
    a = np.array([2.0, 9.0, 0.25])
    ours, theirs = both(newton_sqrt)
    close(rlx.jvp(ours, (a,), (np.ones(3),)), jax.jvp(theirs, (a,), (np.ones(3),)))
    traced = rlx.trace(lambda a, t: rlx.jvp(ours, (a,), (t,)), (a, a))
    assert rlx.to_text(traced.module).count("rlx.while") == 1  # primal and tangent: one loop


def test_jvp_of_jvp_and_vmap_of_jvp_through_while_loop_match_jax():
    ours, theirs = both(newton_sqrt)
    a, t = np.array([2.0, 9.0]), np.ones(2)
    inner = lambda f: lambda a: (rlx.jvp if f is ours else jax.jvp)(f, (a,), (t,))[1]  # noqa: E731
    close(rlx.jvp(inner(ours), (a,), (t,)), jax.jvp(inner(theirs), (a,), (t,)))
    batch = np.array([[2.0, 9.0], [4.0, 0.5]])
    close(rlx.vmap(inner(ours))(batch), jax.vmap(inner(theirs))(batch))


def test_grad_of_while_loop_is_finite_where_the_body_overflows_after_the_exit():
    """The masked steps after the exit rerun the last real step, not the body on the final
    state (exp(11966) there was inf, and 0 * inf made the gradient NaN)."""
    def make(lib, c, **kw):
        return lambda x: c.while_loop(lambda s: s < 50.0, lambda s: s + lib.exp(s), x, **kw)
    x = np.float64(2.0)
    got = rlx.grad(make(*RLX, max_iterations=10))(x)
    want = jax.jvp(make(*JAX), (x,), (np.float64(1.0),))[1]
    assert np.isfinite(got)
    close(got, want)


def test_grad_and_hessian_of_a_long_while_loop_closing_over_weights_match_jax():
    """A bound of 300, an exit after 122 steps, a closed-over weight in the body and a
    threshold in cond: the masked scan gives JAX's gradients and second derivative."""
    def ours(w, a, x):
        step = lambda s: s + 0.01 + rlx.nn.tanh(s @ w) * 0.01  # noqa: E731
        return rlx.while_loop(lambda s: s.sum() < a, step, x, max_iterations=300).sum()

    def theirs(w, a, x):
        body = lambda i, s: jnp.where(s.sum() < a, s + 0.01 + jnp.tanh(s @ w) * 0.01, s)  # noqa: E731
        return lax.fori_loop(0, 300, body, x).sum()

    a, x = np.float64(3.0), np.abs(H0) * 0.1
    close(rlx.grad(ours, argnums=(0, 2))(W, a, x), jax.grad(theirs, argnums=(0, 2))(W, a, x))
    close(rlx.hessian(lambda x: ours(W, a, x))(x), jax.hessian(lambda x: theirs(W, a, x))(x),
          rtol=1e-9)


def test_grad_of_while_loop_without_max_iterations_is_an_error():
    with pytest.raises(RlxError, match="needs a max_iterations"):
        rlx.grad(lambda x: rlx.while_loop(lambda s: s.sum() < 5.0, lambda s: s * 1.5, x).sum()
                 )(np.abs(V) + 0.1)


def test_called_outside_a_trace_they_compile_and_run():
    close(rlx.scan(lambda c, x: (c + x, c * x), H0, XS),
          lax.scan(lambda c, x: (c + x, c * x), H0, XS))
    close(rlx.cond(True, lambda a: a + 1.0, lambda a: a - 1.0, V), V + 1.0)
    close(rlx.while_loop(lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2.0), (0, V)),
          (np.int32(3), V * 8.0))
    close(rlx.fori_loop(0, 3, lambda i, h: h + i, V), V + 3.0)


def test_on_builder_tensors_the_op_goes_into_that_builder():
    b = rlx.Builder("f")
    w, h0 = b.param("w", (3, 3), "f64"), b.input("h0", (3,), "f64")
    h, _ = rlx.scan(lambda h, x: (rlx.nn.tanh(h @ w + x), None), h0, XS)
    b.ret(h.sum())
    want = lax.scan(lambda h, x: (jnp.tanh(h @ W + x), None), H0, XS)[0].sum()
    close(rlx.interpret(b.module, w=W, h0=H0)[0], want)


def test_the_api_docs_example_runs_and_matches_jax():
    api = pathlib.Path(__file__).resolve().parents[2] / "docs" / "api.md"
    section = api.read_text().split("## Structured control flow", 1)[1]
    example = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    scope = {"rlx": rlx, "w": W, "h0": H0, "xs": XS}
    exec(compile(example, str(api), "exec"), scope)

    def loss(w, h0, xs):
        h, hs = lax.scan(lambda h, x: (jnp.tanh(h @ w + x),) * 2, h0, xs)
        h = lax.cond(h.sum() > 0, lambda a: a * 2.0, lambda a: -a, h)
        return h.sum() + (hs * hs).sum()

    close(rlx.grad(scope["loss"])(W, H0, XS), jax.grad(loss)(W, H0, XS))


# ---------------------------------------------------------------- review: loops at scale


def test_the_unused_trajectory_cotangent_is_not_a_dense_constant():
    """The gradient of a scan's final carry had a zero cotangent for the other steps'
    carries built as a dense ``[L - 1, *carry]`` constant at trace time (L = 800: 3.8 s,
    1.2 GB); large fills are now a scalar constant expanded."""
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((64, 64)) / 8).astype(np.float32)
    xs = rng.standard_normal((300, 8, 64)).astype(np.float32)
    h0 = np.zeros((8, 64), np.float32)

    def loss(w, xs):
        h, _ = rlx.scan(lambda h, x: (rlx.nn.tanh(h @ w + x), None), h0, xs)
        return (h ** 2).mean()

    text = str(rlx.jit(rlx.grad(loss)).lower(w, xs))
    assert len(text) < 200_000 and "tensor<299x8x64xf32>} : () ->" not in text
    got = rlx.grad(loss)(w, xs)

    def loss_jax(w, xs):
        h, _ = jax.lax.scan(lambda h, x: (jax.numpy.tanh(h @ w + x), None), h0, xs)
        return (h ** 2).mean()

    np.testing.assert_allclose(got, jax.grad(loss_jax)(w, xs), rtol=1e-4, atol=1e-7)


def test_a_long_fori_loop_computes_its_indices_at_run_time(monkeypatch):
    """``fori_loop(0, 10**7, ...)`` scanned over a constant ``arange`` of every index (14 s,
    860 MB); past 1024 steps the indices are an exclusive cumsum at run time."""
    from rlx_mlir.frontend import control

    x = np.ones(2, np.float32)
    fn = rlx.jit(lambda x: rlx.fori_loop(0, 10**7, lambda i, c: c * 0.5 + 0.5, x))
    assert len(str(fn.lower(x))) < 20_000
    np.testing.assert_array_equal(fn(x), [1.0, 1.0])
    w = np.array([0.999, 1.0005])

    def loss(w):
        return (rlx.fori_loop(3, 2003, lambda i, c: c * w + 1e-3 * i, w * 2) ** 2).sum()

    counted = rlx.jit(rlx.value_and_grad(loss))(w)
    monkeypatch.setattr(control, "FORI_INDEX_ARRAY_MAX", 10**6)  # the arange constant
    listed = rlx.jit(rlx.value_and_grad(loss))(w)
    np.testing.assert_array_equal(counted[0], listed[0])
    np.testing.assert_array_equal(counted[1], listed[1])


def test_cond_takes_an_int8_predicate():
    x = np.ones(3, np.float32)
    for pred, want in ((np.int8(1), 2.0), (np.int8(0), 0.0)):
        got = rlx.jit(lambda p, x: rlx.cond(p, lambda a: a + 1.0, lambda a: a - 1.0, x))(pred, x)
        np.testing.assert_array_equal(got, [want] * 3)


def test_check_grads_forgives_the_finite_differences_rounding():
    """A small gradient component next to a large loss (``tanh(1e-7 x) + 100``) was
    reported OFF (7e-5) although exact: the difference was all rounding of the loss."""
    text = """
func.func @f(%x: tensor<2xf64> {rlx.name = "x", rlx.param}) -> tensor<f64> {
  %k = rlx.constant {value = dense<[1.0, 1.0e-7]> : tensor<2xf64>} : () -> tensor<2xf64>
  %m = rlx.mul %x, %k : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %t = rlx.tanh %m : (tensor<2xf64>) -> tensor<2xf64>
  %s = rlx.reduce_sum %t {axes = array<i64: 0>, keep_dims = false} : (tensor<2xf64>) -> tensor<f64>
  %c = rlx.constant {value = dense<100.0> : tensor<f64>} : () -> tensor<f64>
  %r = rlx.add %s, %c : (tensor<f64>, tensor<f64>) -> tensor<f64>
  func.return %r : tensor<f64>
}"""
    assert rlx.testing.check_grads(text, "f", raise_on_error=False).ok
