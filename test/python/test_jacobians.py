"""rlx.jacfwd / rlx.jacrev / rlx.hessian against JAX's (float64, natively compiled):
vector and matrix arguments and outputs, argnums, composition with jit and grad, errors."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import rlx_mlir as rlx

jnp = jax.numpy
pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)

RNG = np.random.default_rng(4)
W = RNG.standard_normal((3, 4))
X = RNG.standard_normal(3)
M = RNG.standard_normal((2, 3))
PAIRS = [(rlx.jacfwd, jax.jacfwd), (rlx.jacrev, jax.jacrev)]


def close(got, want):
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=["jacfwd", "jacrev"])
def test_jacobians_of_vector_and_matrix_functions_match_jax(ours, theirs):
    close(ours(lambda x: rlx.nn.tanh(x @ W) * x.sum())(X),
          theirs(lambda x: jnp.tanh(x @ W) * x.sum())(X))
    got = ours(lambda m: rlx.nn.tanh(m @ W))(M)
    assert got.shape == (2, 4, 2, 3)
    close(got, theirs(lambda m: jnp.tanh(m @ W))(M))


@pytest.mark.parametrize(("ours", "theirs"), PAIRS, ids=["jacfwd", "jacrev"])
def test_argnums_tuple_gives_one_jacobian_per_argument(ours, theirs):
    def f(lib):
        return lambda x, m: lib.tanh(m @ x) * (x ** 2).sum()
    got = ours(f(rlx.nn), argnums=(0, 1))(X, M)
    want = theirs(f(jnp), argnums=(0, 1))(X, M)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want, strict=True):
        close(g, w)


def test_hessian_matches_jax_for_each_argument():
    f = lambda x, m: ((m @ x) ** 3).sum() + (x ** 2).sum() * m.sum()  # noqa: E731
    close(rlx.hessian(f)(X, M), jax.hessian(f)(X, M))
    close(rlx.hessian(f, argnums=1)(X, M), jax.hessian(f, argnums=1)(X, M))


def test_they_compose_with_jit_and_grad():
    quartic = lambda y: (y ** 4).sum()  # noqa: E731
    close(rlx.jit(lambda x: rlx.hessian(quartic)(x))(X), jax.hessian(quartic)(X))
    close(rlx.grad(lambda x: rlx.jacfwd(lambda y: rlx.nn.tanh(y @ W))(x).sum())(X),
          jax.grad(lambda x: jax.jacfwd(lambda y: jnp.tanh(y @ W))(x).sum())(X))


def test_an_integer_argument_is_a_clear_error():
    with pytest.raises(rlx.RlxError, match="must be a float array; got i64"):
        rlx.jacfwd(lambda x: x)(np.arange(3))


def test_a_tuple_output_matches_jax():
    rows = rlx.jacrev(lambda x: (x * x, x.sum()))(X)
    expected = jax.jacrev(lambda x: (x * x, x.sum()))(X)
    for got, want in zip(rows, expected, strict=True):
        close(got, want)


@pytest.mark.usefixtures("jax_x64")
def test_holomorphic_jacobians_match_jax():
    """jacfwd / jacrev / hessian with holomorphic=True give the complex derivative of a
    holomorphic function, as JAX's (reverse mode conjugates the SPEC 5.9 gradient of the
    real part); without it a complex argument is an error that names the flag."""
    import jax
    import jax.numpy as jnp

    z = (np.arange(3) + 1j * np.arange(1, 4)).astype(np.complex128)

    def f(z):
        return z * z * z[::-1] + rlx.nn.exp(z)

    want = jax.jacfwd(lambda z: z * z * z[::-1] + jnp.exp(z), holomorphic=True)(z)
    for jac in (rlx.jacfwd, rlx.jacrev):
        got = jac(f, holomorphic=True)(z)
        assert got.dtype == np.complex128
        np.testing.assert_allclose(got, np.asarray(want), rtol=1e-12)
    hessian = rlx.hessian(lambda z: (z * z * z).sum(), holomorphic=True)(z)
    np.testing.assert_allclose(hessian, np.diag(6 * z), rtol=1e-12)
    with pytest.raises(rlx.RlxError, match="got c128 .for the complex derivative .* pass "
                                           "holomorphic=True"):
        rlx.jacfwd(f)(z)
    with pytest.raises(rlx.RlxError, match=r"jacrev\(holomorphic=True\): the differentiated "
                                           "argument 0 must be a complex array; got f64"):
        rlx.jacrev(f, holomorphic=True)(z.real)


def test_vjp_matches_jax_on_pytrees_with_aux_and_inside_jit():
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    p = {"w": rng.standard_normal((4, 3)).astype(np.float32),
         "b": rng.standard_normal(3).astype(np.float32)}
    x = rng.standard_normal((5, 4)).astype(np.float32)

    def f(p, x, nn):
        h = nn.tanh(x @ p["w"] + p["b"])
        return h, (h ** 2).sum(axis=1)

    (y, s), pull = rlx.vjp(lambda p, x: f(p, x, rlx.nn), p, x)
    (jy, js), jpull = jax.vjp(lambda p, x: f(p, x, jnp), p, x)
    np.testing.assert_allclose(y, jy, rtol=1e-5, atol=1e-6)
    ct = (rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal(5).astype(np.float32))
    (dp, dx), (jdp, jdx) = pull(ct), jpull(ct)
    for ours, theirs in ((dp["w"], jdp["w"]), (dp["b"], jdp["b"]), (dx, jdx)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    out, pull, aux = rlx.vjp(lambda x: (rlx.nn.sin(x), x.sum()), x, has_aux=True)
    np.testing.assert_allclose(pull(np.ones_like(x))[0], np.cos(x), rtol=1e-6)
    np.testing.assert_allclose(aux, x.sum(), rtol=1e-6)

    @rlx.jit
    def pulled_back(x):
        y, pull = rlx.vjp(rlx.nn.sin, x)
        return pull(y)[0]

    np.testing.assert_allclose(pulled_back(x), np.sin(x) * np.cos(x), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("call,message", [
    (lambda x: rlx.vjp(rlx.nn.sin, x)[1](np.ones(2, np.float32)),
     "vjp: cotangent has shape [2] and dtype f32; the output has [5, 4] and f32"),
    (lambda x: rlx.vjp(rlx.nn.sin, x)[1]((x,)), "vjp: the cotangent is a tuple of 1; the "
                                                "output is a tensor"),
    (lambda x: rlx.vjp(lambda x: x > 0, x), "vjp: output is i1; vjp takes real float outputs"),
    (lambda x: rlx.vjp(rlx.nn.sin), "vjp: needs at least one primal argument"),
])
def test_vjp_misuse_is_a_located_error(call, message):
    x = np.ones((5, 4), np.float32)
    with pytest.raises(rlx.RlxError, match=re.escape(message)) as info:
        call(x)
    assert "test_jacobians.py" in str(info.value)
