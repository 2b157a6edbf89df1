"""rlx.nn's composite functions against jax.nn / jax.numpy (float64, natively compiled):
values and gradients, including inputs large enough to overflow a naive formula."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import rlx_mlir as rlx

jnp = jax.numpy
pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)

X = np.random.default_rng(2).standard_normal((4, 5)) * 30  # exp(|x|) overflows f64 at ~710

PAIRS = {
    "softplus": (rlx.nn.softplus, jax.nn.softplus),
    "leaky_relu": (rlx.nn.leaky_relu, jax.nn.leaky_relu),
    "leaky_relu_0.2": (lambda x: rlx.nn.leaky_relu(x, 0.2), lambda x: jax.nn.leaky_relu(x, 0.2)),
    "elu": (rlx.nn.elu, jax.nn.elu),
    "elu_alpha": (lambda x: rlx.nn.elu(x * 30, 0.5), lambda x: jax.nn.elu(x * 30, 0.5)),
    "logsumexp": (rlx.nn.logsumexp, jax.nn.logsumexp),
    "logsumexp_axis": (lambda x: rlx.nn.logsumexp(x, axis=1),
                       lambda x: jax.nn.logsumexp(x, axis=1)),
    "logsumexp_keepdims": (lambda x: rlx.nn.logsumexp(x, axis=(0,), keepdims=True),
                           lambda x: jax.nn.logsumexp(x, axis=(0,), keepdims=True)),
    "abs": (rlx.nn.abs, jnp.abs),
    "sin": (rlx.nn.sin, jnp.sin),
    "cos": (rlx.nn.cos, jnp.cos),
}


@pytest.mark.parametrize("name", PAIRS)
def test_value_and_gradient_match_jax(name):
    ours, theirs = PAIRS[name]
    np.testing.assert_allclose(rlx.jit(ours)(X), theirs(X), rtol=1e-13, atol=1e-13)
    g = rlx.grad(lambda x: (ours(x) ** 2).sum())(X)
    want = jax.grad(lambda x: (theirs(x) ** 2).sum())(X)
    assert np.isfinite(g).all()
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


def test_softplus_at_zero_has_derivative_one_half_like_jax():
    zeros = np.zeros(3)
    np.testing.assert_array_equal(rlx.grad(lambda x: rlx.nn.softplus(x).sum())(zeros),
                                  jax.grad(lambda x: jax.nn.softplus(x).sum())(zeros))


@pytest.mark.parametrize(("ids", "dtype"), [(np.array([0, 2, 5, -1, 1], np.int32), "f32"),
                                            (np.array([[3, 0], [1, 7]], np.int64), "f64")])
def test_one_hot_matches_jax(ids, dtype):
    got = rlx.jit(lambda i: rlx.nn.one_hot(i, 4, dtype=dtype))(ids)
    assert got.dtype == np.dtype({"f32": np.float32, "f64": np.float64}[dtype])
    np.testing.assert_array_equal(got, jax.nn.one_hot(ids, 4))


def test_one_hot_of_an_unknown_dtype_is_an_error():
    with pytest.raises(rlx.RlxError, match="one_hot: dtype must be one of f32, f64"):
        rlx.jit(lambda i: rlx.nn.one_hot(i, 4, dtype="i8"))(np.array([1]))
