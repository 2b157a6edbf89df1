"""Transformed functions that close over tensors of an enclosing trace, against JAX
(float64): the closed-over value is a constant for the inner ``grad`` / ``vmap`` / ``jvp``
(not differentiated, not batched, zero tangent) but still a function of the outer
transformation's inputs, at any depth of nesting; outer tensors may sit on either side
of an operator or ``rlx.nn`` call."""

from collections.abc import Callable

import jax
import numpy as np
import pytest
from tree_checks import assert_trees_close

import rlx_mlir as rlx
from rlx_mlir import RlxError

jnp = jax.numpy

RNG = np.random.default_rng(23)
X = RNG.normal(size=3)
V = RNG.normal(size=3)
YS = RNG.normal(size=(4, 3))
A = RNG.normal(size=(3, 3))
B = RNG.normal(size=(3, 3))


pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)


def close(got, want):
    assert_trees_close(got, want, rtol=1e-11, atol=1e-13)


# ---------------------------------------------------------------- grad


def test_jit_of_grad_of_closure_matches_jax():
    def make(lib, grad):
        return lambda a: grad(lambda y: (lib.tanh(y * a) * a).sum())(V)

    close(rlx.jit(make(rlx.nn, rlx.grad))(X), jax.jit(make(jnp, jax.grad))(X))


def test_second_order_through_the_closure_matches_jax():
    """The inner grad holds ``a`` constant; the outer grad differentiates through it."""
    def make(lib, grad):
        return lambda a: grad(lambda y: lib.tanh(y * a * a).sum())(V).sum()

    close(rlx.grad(make(rlx.nn, rlx.grad))(X), jax.grad(make(jnp, jax.grad))(X))


def test_value_and_grad_closure_with_argnums_matches_jax():
    def make(lib, vg):
        def outer(a):
            loss, (gy, gz) = vg(lambda y, z: (lib.tanh(y * a) * z).sum(), (0, 1))(V, a)
            return loss + (gy * gz).sum()
        return outer

    close(rlx.grad(make(rlx.nn, rlx.value_and_grad))(X),
          jax.grad(make(jnp, jax.value_and_grad))(X))


# ---------------------------------------------------------------- vmap


def test_vmap_of_closure_leaves_the_captured_value_unbatched():
    def make(lib, vmap):
        return lambda a: vmap(lambda y: lib.tanh(y * a).sum() * a)(YS)

    got = rlx.jit(make(rlx.nn, rlx.vmap))(X)
    assert got.shape == (4, 3)
    close(got, jax.jit(make(jnp, jax.vmap))(X))


def test_grad_through_vmap_of_closure_matches_jax():
    def make(lib, vmap):
        return lambda a: (vmap(lambda y: lib.tanh(y * a))(YS) ** 2).sum()

    close(rlx.grad(make(rlx.nn, rlx.vmap))(X), jax.grad(make(jnp, jax.vmap))(X))


def test_vmap_of_closure_returning_the_captured_value_broadcasts():
    close(rlx.jit(lambda a: rlx.vmap(lambda y: a)(YS))(X), np.broadcast_to(X, (4, 3)))


# ---------------------------------------------------------------- jvp


def test_jvp_of_closure_has_no_tangent_for_the_captured_value():
    def make(lib, jvp):
        return lambda a: jvp(lambda y: lib.tanh(y * a) * a, (V,), (YS[0],))

    close(rlx.jit(make(rlx.nn, rlx.jvp))(X), jax.jit(make(jnp, jax.jvp))(X))


def test_jvp_without_primal_leaves_gives_the_captured_value_no_tangent():
    got = rlx.jit(lambda a: rlx.jvp(lambda n: (V * a).sum(), (None,), (None,)))(X)
    close(got, (np.dot(V, X), 0.0))


def test_grad_of_jvp_of_closure_matches_jax():
    def make(lib, jvp):
        return lambda a: jvp(lambda y: lib.tanh(y * a).sum(), (V,), (a,))[1]

    close(rlx.grad(make(rlx.nn, rlx.jvp))(X), jax.grad(make(jnp, jax.jvp))(X))


# ---------------------------------------------------------------- operators, both sides


OPS: dict[str, Callable] = {
    "add": lambda p, q: p + q,
    "sub": lambda p, q: p - q,
    "mul": lambda p, q: p * q,
    "div": lambda p, q: p / (q * q + 1.0),
    "matmul": lambda p, q: p @ q,
    "lt": lambda p, q: (p < q) * p,
    "ge": lambda p, q: (p >= q) * q,
}


def _inner_grad(op: Callable, outer_left: bool, grad: Callable, lib) -> Callable:
    """``a -> grad(y -> sum(tanh(op(a, y))))(B)`` (or ``op(y, a)``)."""
    def loss(a, y):
        return lib.tanh(op(a, y) if outer_left else op(y, a)).sum()

    return lambda a: grad(lambda y: loss(a, y))(B)


@pytest.mark.parametrize("outer_left", [True, False], ids=["outer_left", "outer_right"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_operator_with_outer_tensor_on_either_side(name, outer_left):
    op = OPS[name]
    got = rlx.jit(_inner_grad(op, outer_left, rlx.grad, rlx.nn))(A)
    close(got, jax.jit(_inner_grad(op, outer_left, jax.grad, jnp))(A))


@pytest.mark.parametrize("outer_left", [True, False], ids=["outer_left", "outer_right"])
def test_second_order_through_an_operator_on_either_side(outer_left):
    op = OPS["matmul"]

    def total(grad, lib):
        return lambda a: _inner_grad(op, outer_left, grad, lib)(a).sum()

    close(rlx.grad(total(rlx.grad, rlx.nn))(A), jax.grad(total(jax.grad, jnp))(A))


NN = {
    "where_outer_value": (lambda y, a: rlx.nn.where(y > 0, a, y),
                          lambda y, a: jnp.where(y > 0, a, y)),
    "where_outer_condition": (lambda y, a: rlx.nn.where(a > 0, y, 2.0 * y),
                              lambda y, a: jnp.where(a > 0, y, 2.0 * y)),
    "maximum": (lambda y, a: rlx.nn.maximum(a, y), lambda y, a: jnp.maximum(a, y)),
    "minimum": (lambda y, a: rlx.nn.minimum(y, a), lambda y, a: jnp.minimum(y, a)),
}


@pytest.mark.parametrize("name", sorted(NN))
def test_nn_with_mixed_builders_matches_jax(name):
    f_rlx, f_jax = NN[name]

    def make(fn, grad, vmap):
        return lambda a: (grad(lambda y: (fn(y, a) ** 2).sum())(V),
                          vmap(lambda y: fn(y, a))(YS))

    close(rlx.jit(make(f_rlx, rlx.grad, rlx.vmap))(X),
          jax.jit(make(f_jax, jax.grad, jax.vmap))(X))


# ---------------------------------------------------------------- deeper nesting


def _three_levels(grad, vmap, lib):
    """``a -> vmap(y -> grad(z -> sum(tanh(z * y * a) * a))(V))(YS)``: the innermost
    function closes over both enclosing traces."""
    return lambda a: vmap(lambda y: grad(lambda z: (lib.tanh(z * y * a) * a).sum())(V))(YS)


def test_grad_inside_vmap_inside_jit_matches_jax():
    close(rlx.jit(_three_levels(rlx.grad, rlx.vmap, rlx.nn))(X),
          jax.jit(_three_levels(jax.grad, jax.vmap, jnp))(X))


def test_grad_of_three_levels_matches_jax():
    def total(grad, vmap, lib):
        return lambda a: (_three_levels(grad, vmap, lib)(a) ** 2).sum()

    close(rlx.grad(total(rlx.grad, rlx.vmap, rlx.nn))(X),
          jax.grad(total(jax.grad, jax.vmap, jnp))(X))


# ---------------------------------------------------------------- capturing once


def test_a_value_used_twice_is_captured_once_and_a_closure_called_twice_traced_once():
    traces, captured = [], []

    def outer(a):
        def inner(y):
            traces.append(y)
            return (y * a + a * y + (a < y) * a).sum()

        g = rlx.value_and_grad(inner)
        captured.append(g.lower(V))
        return g(V)[1] + g(V)[1]

    close(rlx.jit(outer)(X), 2 * jax.grad(lambda y: (2 * y * X + (X < y) * X).sum())(V))
    assert len(traces) == 1 and len(captured) == 1 and len(captured[0].captures) == 1
    text = captured[0].as_text()  # @inner and @inner_grad, one captured argument each
    assert '"captured_0"' in text and '"captured_1"' not in text


def test_a_transformed_function_reused_in_another_trace_is_retraced():
    box = {}
    inner = rlx.grad(lambda y: (y * box["a"] ** 2).sum())

    def outer(a):
        box["a"] = a
        return inner(V)

    close(rlx.jit(outer)(X), X ** 2)
    close(rlx.jit(outer)(2 * X), 4 * X ** 2)


# ---------------------------------------------------------------- unchanged / errors


def test_closure_over_numpy_outside_any_trace_runs_natively():
    got = rlx.grad(lambda y: (y * X).sum())(V)
    assert isinstance(got, np.ndarray)
    close(got, X)


def test_a_leaked_tracer_is_an_error():
    leaked = []
    rlx.jit(lambda a: leaked.append(a) or a)(X)
    with pytest.raises(RlxError, match="outside the trace it belongs to"):
        rlx.jit(lambda a: rlx.grad(lambda y: (y * leaked[0]).sum())(a))(X)
    with pytest.raises(RlxError, match="outside the trace it belongs to"):
        rlx.jit(lambda a: leaked[0] * a)(X)


def test_indexing_an_outer_tensor_with_an_inner_index_gathers_in_the_inner_trace():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([1, -1, 0], np.int32)

    def outer(e):
        return rlx.jit(lambda t: e[t] * 2.0)(ids)

    np.testing.assert_array_equal(rlx.jit(outer)(table), table[ids] * 2.0)
    grads = rlx.grad(lambda e: outer(e).sum())(table)
    np.testing.assert_array_equal(grads, jax.grad(lambda e: (e[ids] * 2.0).sum())(table))


def _jax():
    import jax
    import jax.numpy as jnp

    return jax, jnp


def test_a_vmap_in_a_loop_reads_the_loop_variable_each_time():
    """``rlx.vmap(layer)`` of one closure over a loop variable: each call traces afresh
    inside a trace and, outside, retraces when the closed-over value is rebound (it used
    the first layer's weights for every layer, and gave the second a zero gradient)."""
    jax, jnp = _jax()
    rng = np.random.default_rng(0)
    params = [rng.standard_normal((3, 3)).astype(np.float32) for _ in range(2)]
    xs = rng.standard_normal((4, 3)).astype(np.float32)

    def mlp(params, xs):
        def layer(x):
            return rlx.nn.tanh(x @ w)
        h = xs
        for w in params:  # noqa: B007 (read by layer)
            h = rlx.vmap(layer)(h)
        return h

    def reference(params, xs):
        h = xs
        for w in params:
            h = jax.vmap(lambda x, w=w: jnp.tanh(x @ w))(h)
        return h

    want = np.asarray(reference(params, xs))
    np.testing.assert_allclose(mlp(params, xs), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rlx.jit(mlp)(params, xs), want, rtol=1e-5, atol=1e-5)
    grads = rlx.grad(lambda p: mlp(p, xs).sum())(params)
    wants = jax.grad(lambda p: reference(p, xs).sum())(params)
    for g, w in zip(grads, wants, strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-4, atol=1e-5)


_BATCH = np.ones((2, 3), np.float32)


def _global_loss(w):
    return ((_BATCH @ w) ** 2).sum()


def test_a_gradient_sees_rebound_globals_and_attributes():
    """A reused ``grad`` whose function reads a global that is reassigned, and ``vmap``
    of a bound method whose instance attribute is reassigned, use the new values (as
    JAX's, which retrace every call); the native code is reused while nothing changes."""
    global _BATCH
    w = np.arange(9, dtype=np.float32).reshape(3, 3) / 9
    step = rlx.grad(_global_loss)
    first = step(w)
    np.testing.assert_allclose(first, 2 * _BATCH.T @ (_BATCH @ w), rtol=1e-5)
    assert step(w) is not first and np.array_equal(step(w), first)
    _BATCH = np.full((2, 3), 3.0, np.float32)
    np.testing.assert_allclose(step(w), 2 * _BATCH.T @ (_BATCH @ w), rtol=1e-5)

    class Model:
        def __init__(self):
            self.w = w

        def forward(self, x):
            return x @ self.w

    model, xs = Model(), np.ones((4, 3), np.float32)
    np.testing.assert_allclose(rlx.vmap(model.forward)(xs), xs @ w, rtol=1e-6)
    model.w = w - 0.5
    np.testing.assert_allclose(rlx.vmap(model.forward)(xs), xs @ (w - 0.5), rtol=1e-6)


def test_jit_keeps_reading_closures_when_it_traces():
    """``jit`` reads closed-over values when it traces, as JAX's (documented)."""
    scale = np.float32(2.0)
    f = rlx.jit(lambda x: x * scale)
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(f(x), [2.0, 2.0])
    scale = np.float32(5.0)  # noqa: F841 (read by the closure)
    np.testing.assert_array_equal(f(x), [2.0, 2.0])


def test_keyword_arguments_after_defaults_and_static_defaults():
    """A keyword argument after a skipped default, and a static argument left to its
    default, as in JAX."""
    x = np.ones(3, np.float32)

    def f(x, n=2.0, scale=1.0):
        return (x * n * scale).sum()

    assert rlx.jit(f)(x, scale=np.float32(3.0)) == 18.0
    np.testing.assert_array_equal(rlx.grad(f)(x, scale=np.float32(3.0)), [6.0] * 3)
    assert rlx.jit(f, static_argnums=1)(x) == 6.0
    assert rlx.jit(f, static_argnames="n")(x) == 6.0
    assert rlx.jit(f, static_argnames="scale")(x, 3.0) == 9.0


def test_vmap_passes_unbatched_python_values_through():
    """``in_axes=None`` Python values (a flag, a size, a string) stay Python values, as in
    JAX, so ``fn`` may branch or reshape on them."""
    xs = np.arange(24, dtype=np.float32).reshape(4, 6)
    doubled = rlx.vmap(lambda a, on: a * 2.0 if on else a, in_axes=(0, None))(xs, True)
    np.testing.assert_array_equal(doubled, xs * 2)
    folded = rlx.vmap(lambda a, n: a.reshape(n, -1).sum(0), in_axes=(0, None))(xs, 2)
    np.testing.assert_array_equal(folded, xs.reshape(4, 2, 3).sum(1))
    act = rlx.vmap(lambda a, name: rlx.nn.relu(a - 10) if name == "relu" else a,
                   in_axes=(0, None))(xs, "relu")
    np.testing.assert_array_equal(act, np.maximum(xs - 10, 0))
