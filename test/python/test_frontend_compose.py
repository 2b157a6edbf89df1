"""The tracing front end against JAX (float64): ``jvp`` composed with ``jit``, ``grad``
and ``vmap`` (Hessian-vector products both ways), numpy float64 scalars keeping f64,
and ``None`` as an empty pytree node in inputs and outputs."""

import jax
import numpy as np
import pytest
from tree_checks import assert_trees_close

import rlx_mlir as rlx
from rlx_mlir import RlxError

jnp = jax.numpy

RNG = np.random.default_rng(11)
X = np.array([0.3, -1.2, 2.0])
V = np.array([0.5, 1.0, -2.0])


pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)


def f_rlx(x):
    return (rlx.nn.tanh(x) ** 3).sum() + (x * x).prod()


def f_jax(x):
    return (jnp.tanh(x) ** 3).sum() + (x * x).prod()


def close(got, want):
    assert_trees_close(got, want)


# ---------------------------------------------------------------- jvp composes


def test_jit_of_jvp_matches_jax():
    got = rlx.jit(lambda x, v: rlx.jvp(f_rlx, (x,), (v,)))(X, V)
    close(got, jax.jvp(f_jax, (X,), (V,)))


def test_hvp_forward_over_reverse_matches_jax():
    want = jax.jvp(jax.grad(f_jax), (X,), (V,))[1]
    close(rlx.jvp(rlx.grad(f_rlx), (X,), (V,))[1], want)
    close(rlx.jit(lambda x, v: rlx.jvp(rlx.grad(f_rlx), (x,), (v,))[1])(X, V), want)


def test_hvp_reverse_over_forward_matches_jax():
    got = rlx.grad(lambda x: rlx.jvp(f_rlx, (x,), (V,))[1])(X)
    close(got, jax.grad(lambda x: jax.jvp(f_jax, (x,), (V,))[1])(X))


def test_grad_with_respect_to_the_tangent_matches_jax():
    got = rlx.grad(lambda t: rlx.jvp(f_rlx, (X,), (t,))[1])(V)
    close(got, jax.grad(lambda t: jax.jvp(f_jax, (X,), (t,))[1])(V))


def test_jvp_of_jvp_matches_jax():
    got = rlx.jvp(lambda x: rlx.jvp(f_rlx, (x,), (V,))[1], (X,), (V,))
    close(got, jax.jvp(lambda x: jax.jvp(f_jax, (x,), (V,))[1], (X,), (V,)))


def test_vmap_of_jvp_matches_jax():
    xs, vs = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    got = rlx.vmap(lambda x, t: rlx.jvp(f_rlx, (x,), (t,)))(xs, vs)
    close(got, jax.vmap(lambda x, t: jax.jvp(f_jax, (x,), (t,)))(xs, vs))
    hvps = rlx.vmap(lambda t: rlx.jvp(rlx.grad(f_rlx), (X,), (t,))[1])(vs)
    close(hvps, jax.vmap(lambda t: jax.jvp(jax.grad(f_jax), (X,), (t,))[1])(vs))


def test_jvp_of_jit_and_vmap_matches_jax():
    xs, ts = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))
    close(rlx.jvp(rlx.jit(f_rlx), (X,), (V,)), jax.jvp(f_jax, (X,), (V,)))
    close(rlx.jvp(rlx.vmap(f_rlx), (xs,), (ts,)), jax.jvp(jax.vmap(f_jax), (xs,), (ts,)))


@pytest.mark.parametrize("primals, tangents, message", [
    (X, V, "primals and tangents must be tuples or lists; got ndarray and ndarray"),
    ((X,), (V, V), "1 primals but 2 tangents"),
    ((X,), ((V,),), "the same pytree structure"),
    ((X,), (V[:2],), r"the tangent at \[0\] is f64\[2\] but its primal is f64\[3\]"),
    ((X,), (V.astype(np.float32),), r"the tangent at \[0\] is f32\[3\] but its primal is f64"),
    ((np.arange(3),), (np.arange(3),), r"the primal at \[0\] is i64\[3\]; jvp differentiates"),
])
def test_jvp_bad_arguments_are_rlx_errors(primals, tangents, message):
    with pytest.raises(RlxError, match=message):
        rlx.jvp(lambda a: a * 2, primals, tangents)


# ---------------------------------------------------------------- float64 scalars


def test_numpy_float64_scalars_stay_float64():
    third = np.float64(1 / 3)
    out = rlx.jit(lambda t: t * 3.0 - 0.5)(third)
    assert out.dtype == np.float64 and out == third * 3.0 - 0.5
    close(rlx.grad(lambda t: t * t)(X[0]), 2 * X[0])
    close(rlx.jvp(lambda t: t * t, (X[0],), (np.float64(1.0),)), (X[0] ** 2, 2 * X[0]))
    assert rlx.jit(lambda a: (a, np.float64(0.1)))(X)[1].dtype == np.float64


def test_python_floats_stay_float32():
    out = rlx.jit(lambda t: t * 3.0)(0.1)
    assert out.dtype == np.float32 and np.isclose(out, 0.3)


def test_grad_of_a_float64_array_is_float64():
    close(rlx.grad(lambda a: (a * a).sum())(X), np.asarray(jax.grad(lambda a: (a * a).sum())(X)))


# ---------------------------------------------------------------- None in pytrees


def test_none_input_leaves_are_empty_subtrees():
    p = {"a": X, "b": None, "c": (V, None)}
    close(rlx.jit(lambda p: p["a"] * p["c"][0])(p), X * V)
    loss_r = lambda p: (p["a"] ** 2 * p["c"][0]).sum()  # noqa: E731
    loss_j = lambda p: (p["a"] ** 2 * p["c"][0]).sum()  # noqa: E731
    close(rlx.value_and_grad(loss_r)(p), jax.value_and_grad(loss_j)(p))
    close(rlx.grad(lambda n, a: (a * a).sum())(None, X), None)
    close(rlx.vmap(lambda a, n: a * 2.0)(np.stack([X, V]), None), np.stack([X, V]) * 2)


def test_none_outputs_come_back_as_none():
    close(rlx.jit(lambda a: (a, None))(X), (X, None))
    close(rlx.jit(lambda a: {"y": a * 2.0, "n": None})(X), {"y": X * 2, "n": None})
    assert rlx.jit(lambda a: None)(X) is None
    close(rlx.vmap(lambda a: (a, None))(np.stack([X, V])), (np.stack([X, V]), None))
    got = rlx.jvp(lambda a: (a * a, None), (X,), (V,))
    close(got, jax.jvp(lambda a: (a * a, None), (X,), (V,)))


def test_grad_of_a_none_output_is_an_rlx_error():
    with pytest.raises(RlxError, match="grad requires a function returning one scalar .* "
                       "it returned None"):
        rlx.grad(lambda a: None)(X)


# ---------------------------------------------------------------- keyword arguments


def _scaled(x, scale=2.0):
    return (x * scale).sum()


def test_jit_and_grad_take_keyword_arguments_like_jax():
    x = np.ones(3)
    assert rlx.jit(_scaled)(x, scale=3.0) == jax.jit(_scaled)(x, scale=3.0)
    assert rlx.jit(_scaled)(x) == 6.0
    close(rlx.grad(_scaled)(x, scale=4.0), jax.grad(_scaled)(x, scale=4.0))
    close(rlx.value_and_grad(_scaled)(x, scale=0.5), jax.value_and_grad(_scaled)(x, scale=0.5))


@pytest.mark.parametrize("call,match", [
    (lambda: rlx.jit(lambda x, *, k: x * k)(np.ones(2), k=2.0), r"keyword-only parameters"),
    (lambda: rlx.jit(_scaled)(np.ones(2), bogus=1), r"unexpected keyword argument 'bogus'"),
    (lambda: rlx.vmap(_scaled)(np.ones((2, 3)), scale=1.0),
     r"vmap: argument 1 is 0-d and cannot be batched along axis 0"),  # keywords: axis 0
])
def test_unsupported_keyword_arguments_are_rlx_errors(call, match):
    with pytest.raises(RlxError, match=match):
        call()


# ---------------------------------------------------------------- static_argnums


def test_static_argnums_are_python_values_traced_once_per_value():
    traced = []

    def step(x, train, scale):
        traced.append(train)
        return x * scale * 2.0 if train else x * scale  # Python control flow on `train`

    fast = rlx.jit(step, static_argnums=1)
    x = np.ones(3)
    np.testing.assert_array_equal(fast(x, True, 3.0), x * 6.0)
    np.testing.assert_array_equal(fast(x, False, 3.0), x * 3.0)
    np.testing.assert_array_equal(fast(x, True, 4.0), x * 8.0)  # scale stays traced
    np.testing.assert_array_equal(fast(x, train=False, scale=2.0), x * 2.0)
    assert traced == [True, False]
    close(fast(x, True, 0.5), jax.jit(step, static_argnums=1)(x, True, 0.5))


def test_static_arguments_must_be_hashable():
    with pytest.raises(RlxError, match=r"static arguments must be hashable"):
        rlx.jit(lambda x, d: x, static_argnums=1)(np.ones(2), {"a": 1})


def test_static_argnames_of_a_kwargs_wrapper_and_dropped_keywords():
    """A ``*args, **kwargs`` wrapper takes ``static_argnames`` among its keywords, as in
    JAX; a traced keyword that only **kwargs takes is an error (it was silently dropped)."""
    import jax

    def f(x, training, scale=1.0):
        return x * 2 * scale if training else x

    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)

    x = np.ones(3, np.float32)
    ours = rlx.jit(wrapper, static_argnames=("training", "scale"))
    theirs = jax.jit(wrapper, static_argnames=("training", "scale"))
    for kwargs in ({"training": True}, {"training": False}, {"training": True, "scale": 3.0}):
        np.testing.assert_array_equal(ours(x, **kwargs), theirs(x, **kwargs))
    with pytest.raises(RlxError, match=r"keyword arguments that go to \*\*kwargs .*\(scale\)"):
        rlx.jit(wrapper, static_argnames=("training",))(x, training=True, scale=3.0)
