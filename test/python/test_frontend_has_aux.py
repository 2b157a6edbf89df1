"""grad / value_and_grad with has_aux=True against JAX (float64): the aux pytree passes
through undifferentiated, natively and inside other transformations; misuse is a located
error."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import rlx_mlir as rlx

jnp = jax.numpy
pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)

RNG = np.random.default_rng(8)
W = RNG.standard_normal((3, 2))
X = RNG.standard_normal((4, 3))


def loss(lib):
    def f(w, x):
        h = lib.tanh(x @ w)
        return (h ** 2).sum(), {"h": h, "mean": h.mean()}
    return f


def close(got, want):
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_value_and_grad_with_aux_matches_jax(argnums):
    close(rlx.value_and_grad(loss(rlx.nn), argnums, has_aux=True)(W, X),
          jax.value_and_grad(loss(jnp), argnums, has_aux=True)(W, X))


def test_grad_with_aux_matches_jax_natively_and_inside_jit_and_vmap():
    close(rlx.grad(loss(rlx.nn), has_aux=True)(W, X),
          jax.grad(loss(jnp), has_aux=True)(W, X))
    ours = rlx.jit(lambda w, x: rlx.grad(loss(rlx.nn), has_aux=True)(w, x)[1]["mean"] * 2)
    close(ours(W, X), jax.grad(loss(jnp), has_aux=True)(W, X)[1]["mean"] * 2)
    batch = np.stack([X, 2 * X])
    close(rlx.vmap(rlx.grad(loss(rlx.nn), has_aux=True), in_axes=(None, 0))(W, batch),
          jax.vmap(jax.grad(loss(jnp), has_aux=True), in_axes=(None, 0))(W, batch))


@pytest.mark.parametrize(("fn", "match"), [
    (lambda w: (w ** 2).sum(), r"requires a function returning a pair \(scalar loss, aux\); "
                               "it returned a tensor"),
    (lambda w: ((w ** 2).sum(), 1, 2), "it returned a tuple of 3"),
    (lambda w: (w, None), r"requires a scalar \(0-d\) output; got shape \(3, 2\)"),
])
def test_misuse_is_a_located_error(fn, match):
    with pytest.raises(rlx.RlxError, match=r"test_frontend_has_aux.py:\d+:\d+: error: .*"
                                           + match):
        rlx.grad(fn, has_aux=True)(W)


def test_has_aux_must_be_a_bool():
    with pytest.raises(rlx.RlxError, match="has_aux must be a bool"):
        rlx.grad(loss(rlx.nn), has_aux="yes")
