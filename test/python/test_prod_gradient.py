"""``prod``'s derivatives where entries are 0: the product of the other elements (JAX's
and torch's values), not ``y / x`` (NaN), for grad, jvp, jit and the Hessian."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rlx_mlir as rlx

# rows with no zero, one, two and three zeros; a column with two
X = np.array([[1.5, -2.0, 3.0, 0.5], [2.0, 0.0, 3.0, 4.0], [0.0, 0.0, 2.0, 5.0],
              [0.0, 0.0, 0.0, 1.0]])
LOSSES = {
    "rows": lambda x: x.prod(axis=1).sum(),
    "rows squared": lambda x: (x.prod(axis=1) ** 2).sum(),
    "columns kept": lambda x: (x.prod(axis=0, keepdims=True) * x).sum(),
    "all": lambda x: x.prod(),
}


pytestmark = pytest.mark.usefixtures("jax_x64")


@pytest.mark.parametrize("name", LOSSES)
def test_prod_grad_and_jvp_at_zeros_match_jax(name):
    loss = LOSSES[name]
    want = jax.grad(loss)(jnp.asarray(X))
    np.testing.assert_allclose(rlx.grad(loss)(X), want, rtol=1e-12)
    np.testing.assert_allclose(rlx.jit(rlx.grad(loss))(X.astype(np.float32)), want, rtol=1e-6)
    direction = np.linspace(-1.0, 1.0, X.size).reshape(X.shape)
    _, tangent = rlx.jvp(loss, (X,), (direction,))
    _, want_tangent = jax.jvp(loss, (jnp.asarray(X),), (jnp.asarray(direction),))
    np.testing.assert_allclose(tangent, want_tangent, rtol=1e-12)
    assert np.isfinite(rlx.grad(loss)(X)).all()


@pytest.mark.parametrize("name", LOSSES)
def test_prod_hessian_at_zeros_matches_jax(name):
    def flat(v):
        return LOSSES[name](v.reshape(X.shape))

    want = jax.hessian(flat)(jnp.asarray(X.ravel()))
    np.testing.assert_allclose(rlx.hessian(flat)(X.ravel()), want, rtol=1e-12, atol=1e-12)
