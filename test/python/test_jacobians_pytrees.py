"""rlx.jacfwd / rlx.jacrev / rlx.hessian on pytree arguments and outputs, argnums tuples
and has_aux, against JAX's (float64; eager, i.e. natively compiled, and inside rlx.jit),
and their errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir import RlxError

jnp = jax.numpy
pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)

RNG = np.random.default_rng(5)
P = {"w": RNG.standard_normal((3, 2)), "b": RNG.standard_normal(2)}
X = RNG.standard_normal(3)
PAIRS = [(rlx.jacfwd, jax.jacfwd), (rlx.jacrev, jax.jacrev)]
IDS = ["jacfwd", "jacrev"]


def close(got, want):
    """Same pytree structure (lists and tuples alike), shapes and values."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert str(got_tree).replace("[", "(").replace("]", ")") == \
        str(want_tree).replace("[", "(").replace("]", ")"), (got_tree, want_tree)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-11, atol=1e-12)


def layer(lib):
    """A dict of parameters and an input to a tuple of outputs (a vector and a scalar)."""
    return lambda p, x: (lib.tanh(x @ p["w"] + p["b"]), (x * x).sum() * p["b"].sum())


def calls(transform):
    """The transformed function called eagerly and inside rlx.jit."""
    return [transform, rlx.jit(transform)]


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=IDS)
def test_dict_argument_and_tuple_output(ours, theirs):
    want = theirs(layer(jnp))(P, X)
    for call in calls(ours(layer(rlx.nn))):
        got = call(P, X)
        assert got[0]["w"].shape == (2, 3, 2) and got[1]["b"].shape == (2,)
        close(got, want)


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=IDS)
@pytest.mark.parametrize("argnums", [(0, 1), (1, 0), (-1,), 1])
def test_argnums_tuples_nest_inside_each_output_leaf(ours, theirs, argnums):
    want = theirs(layer(jnp), argnums=argnums)(P, X)
    for call in calls(ours(layer(rlx.nn), argnums=argnums)):
        close(call(P, X), want)


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=IDS)
def test_nested_lists_tuples_none_and_dict_outputs(ours, theirs):
    args = [RNG.standard_normal(2), (RNG.standard_normal((2, 2)), None)]

    def f(lib):
        return lambda a, s: {"m": lib.tanh(a[1][0] @ a[0]) * s, "s": (a[0] ** 2).sum(),
                             "c": np.ones(3)}

    want = theirs(f(jnp), argnums=(0, 1))(args, 1.5)
    for call in calls(ours(f(rlx.nn), argnums=(0, 1))):
        close(call(args, np.float64(1.5)), want)


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=IDS)
def test_has_aux_returns_the_jacobian_and_aux(ours, theirs):
    def f(lib):
        return lambda p, x: (lib.tanh(x @ p["w"]), {"norm": (p["b"] ** 2).sum(), "x": x})

    for argnums in [0, (0, 1)]:
        want = theirs(f(jnp), argnums=argnums, has_aux=True)(P, X)
        for call in calls(ours(f(rlx.nn), argnums=argnums, has_aux=True)):
            jac, aux = call(P, X)
            close((jac, aux), want)


def test_mixed_float32_and_float64_leaves_keep_jax_dtypes():
    x32, y64 = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(2)

    def f(lib):
        return lambda x, y: (lib.tanh(x), (y ** 2) * x.sum().astype(np.float64))

    for ours, theirs in PAIRS:
        got = ours(f(rlx.nn), argnums=(0, 1))(x32, y64)
        want = theirs(f(jnp), argnums=(0, 1))(x32, y64)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want),
                        strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def scalar_loss(lib):
    return lambda p, x: ((lib.tanh(x @ p["w"] + p["b"]) ** 2).sum() * (x ** 3).sum()
                         + (p["b"] ** 3).sum())


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_hessian_of_dict_arguments(argnums):
    want = jax.hessian(scalar_loss(jnp), argnums=argnums)(P, X)
    for call in calls(rlx.hessian(scalar_loss(rlx.nn), argnums=argnums)):
        got = call(P, X)
        close(got, want)
    if argnums == 0:
        assert got["w"]["b"].shape == (3, 2, 2)


def test_hessian_has_aux():
    def f(lib):
        return lambda p: ((lib.tanh(p["w"]) ** 2).sum() * p["b"].sum(), {"k": p["b"] * 3.0})

    want = jax.hessian(f(jnp), has_aux=True)(P)
    for call in calls(rlx.hessian(f(rlx.nn), has_aux=True)):
        close(call(P), want)


def test_pytree_jacobians_compose_with_grad_and_vmap():
    def g(lib, jac):
        return lambda p: jac(layer(lib))(p, X)[0]["w"].sum()

    close(rlx.grad(g(rlx.nn, rlx.jacrev))(P), jax.grad(g(jnp, jax.jacrev))(P))
    xs = RNG.standard_normal((4, 3))
    close(rlx.vmap(rlx.jacfwd(layer(rlx.nn)), in_axes=(None, 0))(P, xs),
          jax.vmap(jax.jacfwd(layer(jnp)), in_axes=(None, 0))(P, xs))


# ---------------------------------------------------------------- errors


def raises_at_call(match, call):
    """``call()`` raises an RlxError matching ``match``, located at ``call``'s line."""
    with pytest.raises(RlxError, match=match) as e:
        call()
    assert str(e.value).startswith(f"{__file__}:{call.__code__.co_firstlineno}:"), str(e.value)


@pytest.mark.parametrize("transform", [rlx.jacfwd, rlx.jacrev], ids=IDS)
def test_integer_leaves_are_errors(transform):
    name = transform.__name__
    raises_at_call(f"{name}: the differentiated argument 0 at n must be a float array; got i64",
                   lambda: transform(lambda p: p["w"])({"w": X, "n": np.arange(3)}))
    raises_at_call(f"{name}: the output at b must be a float array; got i32",
                   lambda: transform(lambda x: {"a": x, "b": np.int32(1)})(X))


@pytest.mark.parametrize("transform", [rlx.jacfwd, rlx.jacrev, rlx.hessian])
def test_has_aux_needs_a_pair_and_a_bool(transform):
    name = transform.__name__
    raises_at_call(rf"{name}\(has_aux=True\) requires a function returning a pair "
                   r"\(output, aux\); it returned a tuple of 3",
                   lambda: transform(lambda x: (x, x, x), has_aux=True)(X))
    raises_at_call(f"{name}: has_aux must be a bool; got 1",
                   lambda: transform(lambda x: x, has_aux=1))


def test_bad_argnums_are_errors():
    raises_at_call("jacfwd: argnums must be an int or a non-empty tuple of ints",
                   lambda: rlx.jacfwd(lambda x: x, argnums=()))
    raises_at_call("jacrev: argnums 2 is out of range",
                   lambda: rlx.jacrev(lambda p, x: x, argnums=(0, 2))(P, X))
