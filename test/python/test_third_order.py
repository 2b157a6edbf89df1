"""Derivatives of order 3 and 4 of every smooth activation, against JAX in float64.

Second derivatives are emitted as rlx ops and first-order ``activation_backward``
(backward/activation.py ``SECOND_COMPOSITES``), so grad, jvp, jacfwd and hessian compose
to any order (PINN losses, jacfwd of a hessian), natively and in the interpreter.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rlx_mlir as rlx

jax.config.update("jax_enable_x64", True)

def builder_op(name: str):
    """An activation rlx.nn does not export, emitted through the tensor's builder."""
    return lambda x: getattr(x.builder, name)(x)


X = np.array([0.3, 0.7, 1.2, 2.1])  # positive: sqrt, rsqrt and log are smooth there

ACTIVATIONS = {
    "sigmoid": (rlx.nn.sigmoid, jax.nn.sigmoid),
    "tanh": (rlx.nn.tanh, jnp.tanh),
    "silu": (rlx.nn.silu, jax.nn.silu),
    "gelu": (lambda x: rlx.nn.gelu(x), lambda x: jax.nn.gelu(x, approximate=False)),
    "gelu_approx": (lambda x: rlx.nn.gelu(x, approximate=True),
                    lambda x: jax.nn.gelu(x, approximate=True)),
    "exp": (rlx.nn.exp, jnp.exp),
    "log": (rlx.nn.log, jnp.log),
    "sqrt": (rlx.nn.sqrt, jnp.sqrt),
    "rsqrt": (builder_op("rsqrt"), jax.lax.rsqrt),
    "sin": (rlx.nn.sin, jnp.sin),
    "cos": (rlx.nn.cos, jnp.cos),
    "tan": (builder_op("tan"), jnp.tan),
    "atan": (builder_op("atan"), jnp.arctan),
    "softplus": (rlx.nn.softplus, jax.nn.softplus),
    "elu": (rlx.nn.elu, jax.nn.elu),
}


def nth_grad(grad, f, order: int):
    """``d^order/dx^order sum(f(x))``, elementwise, by nested grads of sums."""
    g = f
    for _ in range(order):
        g = (lambda h: grad(lambda x: h(x).sum()))(g)
    return g


@pytest.mark.parametrize("order", [3, 4])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_nested_grads_of_an_activation(name, order):
    ours, theirs = ACTIVATIONS[name]
    want = np.asarray(nth_grad(jax.grad, theirs, order)(X))
    np.testing.assert_allclose(nth_grad(rlx.grad, ours, order)(X), want, rtol=1e-9, atol=1e-9)


def test_third_order_forward_mode_and_interpreter():
    """jvp of jvp of jvp, and the same derivative interpreted from the traced module."""
    t = np.ones_like(X)

    def third(jvp, f):
        return lambda x: jvp(lambda x: jvp(lambda x: jvp(f, (x,), (t,))[1], (x,), (t,))[1],
                             (x,), (t,))[1]

    want = np.asarray(third(jax.jvp, jnp.tanh)(X))
    np.testing.assert_allclose(third(rlx.jvp, rlx.nn.tanh)(X), want, rtol=1e-9)
    traced = rlx.trace(nth_grad(rlx.grad, rlx.nn.tanh, 3), (X,))
    (got,) = rlx.interpret(traced.module, X, entry=traced.name)
    np.testing.assert_allclose(got, np.asarray(nth_grad(jax.grad, jnp.tanh, 3)(X)), rtol=1e-9)


def test_jacfwd_of_the_hessian_of_a_tanh_network():
    """A PINN-style third-order derivative of a small network."""
    rng = np.random.default_rng(0)
    w1, w2 = rng.standard_normal((2, 5)) * 0.7, rng.standard_normal(5) * 0.7
    x = np.array([0.2, -0.4])

    def net(lib):
        return lambda x: lib.tanh(x @ w1) @ w2

    want = np.asarray(jax.jacfwd(jax.hessian(net(jnp)))(x))
    np.testing.assert_allclose(rlx.jacfwd(rlx.hessian(net(rlx.nn)))(x), want, rtol=1e-8,
                               atol=1e-10)
