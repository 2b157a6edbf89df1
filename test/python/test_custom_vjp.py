"""``rlx.custom_vjp``: JAX's custom reverse-mode rule API on ``rlx.custom_fn`` (gradients
against the rule's closed form and JAX's own custom_vjp)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rlx_mlir as rlx

X = np.array([0.5, -2.0, 3.0, 0.1], np.float32)


@rlx.custom_vjp
def clip_gradient(v):
    return v


clip_gradient.defvjp(lambda v: (v, None), lambda _, g: (rlx.nn.clip(g, -1.0, 1.0),))


@rlx.custom_vjp
def softplus(v):
    return rlx.nn.log(1.0 + rlx.nn.exp(v))


softplus.defvjp(lambda v: (softplus(v), rlx.nn.sigmoid(v)), lambda s, g: (g * s,))


@rlx.custom_vjp
def scaled_product(a, b):
    return a * b


scaled_product.defvjp(lambda a, b: (scaled_product(a, b), (a, b)),
                      lambda r, g: (g * r[1] * 2.0, None))


def test_the_rule_drives_grad_and_the_primal_runs_forward():
    np.testing.assert_allclose(rlx.grad(lambda v: (clip_gradient(v) * 3.0).sum())(X),
                               np.ones_like(X))
    np.testing.assert_allclose(rlx.jit(softplus)(X), np.log1p(np.exp(X)), rtol=1e-6)
    np.testing.assert_allclose(rlx.grad(lambda v: softplus(v).sum())(X),
                               jax.nn.sigmoid(X), rtol=1e-6)  # fwd calls softplus itself
    np.testing.assert_array_equal(clip_gradient(X), X)  # eager: the primal function


def test_several_arguments_residual_pytrees_and_none_gradients_match_jax():
    @jax.custom_vjp
    def product(a, b):
        return a * b

    product.defvjp(lambda a, b: (a * b, (a, b)), lambda r, g: (g * r[1] * 2.0, None))
    want = jax.grad(lambda a, b: product(a, b).sum(), argnums=(0, 1))(X, X + 1)
    got = rlx.grad(lambda a, b: scaled_product(a, b).sum(), argnums=(0, 1))(X, X + 1)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w)


def test_it_composes_with_vmap_jit_and_jvp():
    batch = np.stack([X, X * 0.1])
    grads = rlx.vmap(rlx.grad(lambda v: (clip_gradient(v) * 3.0).sum()))(batch)
    np.testing.assert_allclose(grads, np.minimum(3.0, 1.0) * np.ones_like(batch))
    np.testing.assert_allclose(rlx.jit(rlx.grad(lambda v: (clip_gradient(v) ** 2).sum()))(X),
                               np.clip(2 * X, -1, 1))
    _, tangent = rlx.jvp(softplus, (X,), (np.ones_like(X),))  # forward mode: fun's own
    np.testing.assert_allclose(tangent, jax.nn.sigmoid(X), rtol=1e-6)
    hess = rlx.hessian(lambda v: softplus(v).sum())(X)
    s = jax.nn.sigmoid(X)
    np.testing.assert_allclose(hess, np.diag(s * (1 - s)), rtol=1e-5, atol=1e-7)


def undefined(v):
    return v


@pytest.mark.parametrize("fwd,bwd,message", [
    (None, None, "call defvjp"),
    (lambda v: v, lambda r, g: (g,), r"fwd must return \(output, residuals\)"),
    (lambda v: (v, None), lambda r, g: g, "bwd must return a tuple of 1 gradient"),
    (lambda v: (v, None), lambda r, g: (g.sum(),), "gradient 0 has shape"),
])
def test_bad_rules_are_located_errors(fwd, bwd, message):
    f = rlx.custom_vjp(undefined)
    if fwd is not None:
        f.defvjp(fwd, bwd)
    with pytest.raises(rlx.RlxError, match=message) as e:
        rlx.grad(lambda v: f(v).sum())(X)
    assert str(e.value).startswith(__file__), str(e.value)


def test_jnp_reference_of_the_clip():
    @jax.custom_vjp
    def clip(v):
        return v

    clip.defvjp(lambda v: (v, None), lambda _, g: (jnp.clip(g, -1.0, 1.0),))
    want = jax.grad(lambda v: (clip(v) * jnp.arange(4.0)).sum())(X)
    got = rlx.grad(lambda v: (clip_gradient(v) * np.arange(4.0, dtype=np.float32)).sum())(X)
    np.testing.assert_allclose(got, want)


def _scaled_sum(w, x, backend):
    """``sum(x * w)`` whose rule (``g * w * 10``) closes over the traced weight ``w``."""
    @backend.custom_vjp
    def scale(h):
        return h * w

    scale.defvjp(lambda h: (scale(h), None), lambda _, g: (g * w * 10,))
    return scale(x).sum()


def test_a_rule_closing_over_a_traced_weight_matches_jax():
    """``fun``/``fwd``/``bwd`` using the enclosing function's traced ``w`` (it was "a traced
    value was used outside the trace it belongs to"), under jit, grad, vmap and
    vmap(grad); values against JAX."""
    w, x = np.float32(2.0), np.arange(3, dtype=np.float32)
    xs = np.stack([x, x + 1])
    for ours, theirs in [
        (rlx.jit(lambda w, x: _scaled_sum(w, x, rlx)), jax.jit(lambda w, x: _scaled_sum(w, x, jax))),
        (rlx.grad(lambda w, x: _scaled_sum(w, x, rlx), argnums=1),
         jax.grad(lambda w, x: _scaled_sum(w, x, jax), argnums=1)),
    ]:
        np.testing.assert_allclose(ours(w, x), theirs(w, x), rtol=1e-6)
    batched = rlx.vmap(lambda w, x: _scaled_sum(w, x, rlx), in_axes=(None, 0))(w, xs)
    np.testing.assert_allclose(batched, jax.vmap(lambda w, x: _scaled_sum(w, x, jax),
                                                 in_axes=(None, 0))(w, xs), rtol=1e-6)
    per_example = rlx.vmap(rlx.grad(lambda w, x: _scaled_sum(w, x, rlx), argnums=1),
                           in_axes=(None, 0))(w, xs)
    np.testing.assert_allclose(per_example, np.full((2, 3), 20.0), rtol=1e-6)


def test_differentiating_a_closed_over_value_is_a_located_error():
    w, x = np.float32(2.0), np.arange(3, dtype=np.float32)
    with pytest.raises(rlx.RlxError, match="uses %w, defined outside it and being "
                                           "differentiated") as info:
        rlx.grad(lambda w, x: _scaled_sum(w, x, rlx), argnums=0)(w, x)
    assert "test_custom_vjp.py" in str(info.value)
