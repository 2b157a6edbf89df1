"""Reverse over reverse through scans: the VJP rules of ``rlx.scan_backward(_xs)``.

The gradient of a gradient penalty (``|| grad f ||^2``) of scan losses against JAX's
``grad(grad)`` (float64, natively compiled): trajectory outputs, checkpointed scans,
integer per-step inputs, pytree carries, several per-step inputs and nested scans.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.ir import to_text

jnp = jax.numpy
lax = jax.lax
pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)

RNG = np.random.default_rng(11)
W = 0.5 * RNG.normal(size=(3, 3))
U = 0.5 * RNG.normal(size=(4, 3))
H0 = RNG.normal(size=(2, 3))
XS = RNG.normal(size=(6, 2, 3))
ZS = RNG.normal(size=(6, 4))
IDS = RNG.integers(0, 5, size=(6, 2))
TABLE = RNG.normal(size=(5, 3))
RLX = (rlx.nn, rlx)
JAX = (jnp, lax)


def penalty(grad: Callable, loss: Callable, argnums: tuple[int, ...]) -> Callable:
    """``sum || d loss / d arg ||^2`` over ``argnums``: its gradient needs the VJP of
    the backward sweep."""
    def pen(*args):
        grads = grad(loss, argnums=argnums)(*args)
        return sum((g * g).sum() for g in grads)
    return pen


def check_second_order(make: Callable, *args, argnums=(0, 1, 2), rtol=1e-10) -> None:
    ours = rlx.grad(penalty(rlx.grad, make(*RLX), argnums), argnums=argnums)(*args)
    theirs = jax.grad(penalty(jax.grad, make(*JAX), argnums), argnums=argnums)(*args)
    for g, w in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(g, np.asarray(w), rtol=rtol, atol=1e-12)


def rnn(num_checkpoints: int = 0, trajectory: bool = True):
    def make(lib, c):
        kw = {"num_checkpoints": num_checkpoints} if c is rlx else {}

        def loss(w, h0, xs):
            def step(h, x):
                h = lib.tanh(h @ w + x)
                return h, (h if trajectory else None)
            h, hs = c.scan(step, h0, xs, **kw)
            return (h ** 2).sum() + (0.0 if hs is None else (hs ** 3).sum())
        return loss
    return make


@pytest.mark.parametrize("trajectory", [False, True])
def test_grad_of_gradient_penalty_through_a_scan(trajectory):
    check_second_order(rnn(trajectory=trajectory), W, H0, XS)


@pytest.mark.parametrize("k", [1, 2, 4, 6])
def test_grad_of_gradient_penalty_through_a_checkpointed_scan(k):
    check_second_order(rnn(num_checkpoints=k, trajectory=False), W, H0, XS)


def test_integer_per_step_inputs_and_two_weights():
    """Token ids per step (no cotangent) next to a float input; two closed-over weights."""
    def make(lib, c):
        def loss(w, u, table, ids, zs):
            def step(h, inputs):
                i, z = inputs
                h = lib.tanh(h @ w + table[i] + (z @ u)[None, :])
                return h, h.sum()
            h, ys = c.scan(step, jnp.zeros((2, 3)) if c is lax else np.zeros((2, 3)),
                           (ids, zs))
            return (h ** 2).sum() + (ys ** 2).sum()
        return loss
    check_second_order(make, W, U, TABLE, IDS, ZS, argnums=(0, 1, 2, 4))


def test_pytree_carry_and_reverse_scan():
    def make(lib, c):
        def loss(w, h0, xs):
            def step(carry, x):
                h, acc = carry
                h = lib.tanh(h @ w + x)
                return (h, acc + (h * h).sum()), None
            (h, acc), _ = c.scan(step, (h0, h0.sum() * 0.0), xs, reverse=True)
            return acc + (h ** 3).sum()
        return loss
    check_second_order(make, W, H0, XS)


def test_nested_scans():
    def make(lib, c):
        def loss(w, h0, xs):
            def outer(h, x):
                inner, _ = c.scan(lambda g, _: (lib.tanh(g @ w + x), None), h, None, length=2)
                return inner, None
            h, _ = c.scan(outer, h0, xs)
            return (h ** 2).sum()
        return loss
    check_second_order(make, W, H0, XS[:3])


def test_the_second_sweep_is_a_scan_of_the_first():
    """The VJP of ``rlx.scan_backward`` emits rlx.scan ops whose own VJPs are sweeps."""
    loss = rnn(num_checkpoints=2, trajectory=False)(*RLX)
    traced = rlx.trace(rlx.grad(penalty(rlx.grad, loss, (0,))), (W, H0, XS))
    text = to_text(traced.module)
    assert "rlx.scan_backward" in text and text.count("rlx.scan ") >= 2
