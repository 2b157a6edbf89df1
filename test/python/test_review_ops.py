"""Regressions from an adversarial review of the op families against PyTorch and JAX,
through the native path (``rlx.jit`` / ``rlx.grad``): the integer-division overflow
trap, ``x ** 0`` gradients, logsumexp of non-finite slices, softplus's negative tail and
float embedding ids."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import rlx_mlir as rlx

# ---------------------------------------------------------------- integer division


def test_int_min_divided_by_minus_one_wraps_instead_of_trapping():
    """``INT_MIN // -1`` and ``% -1`` overflow: ``arith.divsi`` traps (SIGFPE kills the
    process); numpy and JAX wrap to INT_MIN and give remainder 0. In a subprocess, so
    a regression fails this test rather than the whole session."""
    code = textwrap.dedent("""
        import numpy as np, rlx_mlir as rlx
        for dt in (np.int32, np.int64):
            lo = np.iinfo(dt).min
            a = np.array([lo, lo, 7, -7, 5, lo], dt)
            b = np.array([-1, 1, -1, 2, 0, 0], dt)
            f = rlx.jit(lambda a, b: (a // b, a % b, a.builder.div(a, b)))
            q, r, t = f(a, b)
            with np.errstate(all="ignore"):
                assert (q == np.floor_divide(a, b)).all(), (q, np.floor_divide(a, b))
                assert (r == np.mod(a, b)).all(), (r, np.mod(a, b))
            assert (t == np.array([lo, lo, -7, -3, 0, 0], dt)).all(), t
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (run.returncode, run.stderr)


def test_interpreter_int64_division_is_exact():
    """The reference interpreter's truncating division went through f64, losing i64
    digits (``(2**62 + 1) / 1`` came out ``2**62``)."""
    a = np.array([2**62 + 1, -(2**62) - 3, 2**53 + 1, -7, np.iinfo(np.int64).min],
                 np.int64)
    b = np.array([1, 2, -1, 2, -1], np.int64)
    traced = rlx.trace(lambda a, b: a.builder.div(a, b), (a, b))
    got = rlx.interpret(traced.module, a, b, entry=traced.name)
    got = got[0] if isinstance(got, (list, tuple)) else got
    want = np.array([2**62 + 1, -(2**61) - 1, -(2**53) - 1, -3, np.iinfo(np.int64).min])
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------- pow


def test_pow_zero_exponent_has_zero_gradient_at_zero_like_torch():
    """``d(x**0)/dx`` is 0 everywhere (PyTorch, JAX); ``0 * 0**-1`` made it NaN at 0,
    poisoning e.g. a polynomial ``sum_k c_k x**k`` evaluated at 0."""
    x = np.array([0.0, 0.0, 1.5, -2.0], np.float32)
    c = np.array([0.5, -1.0, 2.0, 0.25], np.float32)

    def poly(x):
        return sum(c[k] * x ** k for k in range(4)).sum()

    got = rlx.grad(poly)(x)
    xt = torch.tensor(x, requires_grad=True)
    sum(float(c[k]) * xt ** k for k in range(4)).sum().backward()
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-6)
    assert np.isfinite(got).all()

    # a traced exponent that is 0 in some entries, and forward mode
    e = np.array([0.0, 2.0, 0.0, 3.0], np.float32)
    got = rlx.grad(lambda x, e: (x ** e).sum())(x, e)
    xt = torch.tensor(x, requires_grad=True)
    (xt ** torch.tensor(e)).sum().backward()
    np.testing.assert_allclose(got, xt.grad.numpy(), rtol=1e-6)
    _, tangent = rlx.jvp(lambda x: x ** 0.0, (x,), (np.ones_like(x),))
    np.testing.assert_array_equal(tangent, np.zeros_like(x))


def test_pow_second_derivative_through_zero_exponent():
    """``d2(x + x**3)/dx2 = 6x``, 0 at 0: the inner gradient of ``x**1`` is
    ``1 * x**0``, whose derivative is 0 (it was ``0 * 0**-1 = NaN``)."""
    x = np.array([0.0, 1.0, -3.0], np.float32)
    got = rlx.grad(lambda x: rlx.grad(lambda y: (y ** 1 + y ** 3).sum())(x).sum())(x)
    np.testing.assert_allclose(got, 6 * x, rtol=1e-6)


# ---------------------------------------------------------------- logsumexp


def test_logsumexp_of_non_finite_slices_like_jax():
    """An all ``-inf`` slice (a fully masked row) is ``-inf``, not ``-inf - -inf = NaN``;
    a ``+inf`` entry gives ``+inf`` (jax.nn.logsumexp)."""
    import jax

    x = np.array([[-np.inf, -np.inf, -np.inf], [np.inf, 0.0, 1.0], [-np.inf, 0.0, 1.0],
                  [1.0, 2.0, 3.0]], np.float32)
    got = rlx.jit(lambda x: rlx.nn.logsumexp(x, axis=-1))(x)
    np.testing.assert_allclose(got, np.asarray(jax.nn.logsumexp(x, axis=-1)), rtol=1e-6)
    np.testing.assert_array_equal(got[:2], [-np.inf, np.inf])
    got = rlx.jit(lambda x: rlx.nn.logsumexp(x[:1]))(x)
    assert got == -np.inf
    # finite rows keep their gradient (the softmax)
    g = rlx.grad(lambda x: rlx.nn.logsumexp(x[2:], axis=-1).sum())(x)
    np.testing.assert_allclose(g[2:], torch.softmax(torch.tensor(x[2:]), -1).numpy(),
                               rtol=1e-6)


# ---------------------------------------------------------------- softplus


def test_softplus_negative_tail_keeps_relative_precision_like_torch():
    """``log(1.0 + exp(x))`` rounds ``1 + exp(x)`` first: f32 ``softplus(-10)`` was off by
    4e-4 and ``softplus(x)`` was 0 below x = -17, so ``log(softplus(x))`` (a positive
    scale's log-likelihood) became -inf. PyTorch and JAX keep the tail."""
    x = np.array([-80.0, -40.0, -20.0, -17.0, -10.0, -1.0, -1e-3, 0.0, 1e-3, 1.0, 10.0,
                  20.0, 40.0], np.float32)
    xt = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.softplus(xt)
    got = rlx.jit(rlx.nn.softplus)(x)
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=2e-6, atol=0)

    got = rlx.jit(lambda x: rlx.nn.log(rlx.nn.softplus(x)))(x)
    np.testing.assert_allclose(got, torch.log(want).detach().numpy(), rtol=2e-6, atol=1e-6)
    g = rlx.grad(lambda x: rlx.nn.log(rlx.nn.softplus(x)).sum())(x)
    torch.log(want).sum().backward()
    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=2e-6)


def test_softplus_derivatives_stay_accurate():
    """The gradient (sigmoid) and the second derivative (sigmoid') of softplus: the
    log1p correction must not leak rounding error into them."""
    x = np.array([-40.0, -10.0, -1.0, 0.0, 1.0, 10.0, 40.0])
    s, s_minus = 1 / (1 + np.exp(-x)), 1 / (1 + np.exp(x))  # sigmoid(x), sigmoid(-x)
    for dtype, rtol in ((np.float32, 2e-6), (np.float64, 1e-12)):
        xs = x.astype(dtype)
        g = rlx.grad(lambda x: rlx.nn.softplus(x).sum())(xs)
        np.testing.assert_allclose(g, s, rtol=rtol)
        h = rlx.grad(lambda x: rlx.grad(lambda y: rlx.nn.softplus(y).sum())(x).sum())(xs)
        np.testing.assert_allclose(h, s * s_minus, rtol=max(rtol, 1e-6) * 10)


# ---------------------------------------------------------------- embedding


@pytest.mark.parametrize("ids", [np.array([1.7, -1.0], np.float32), [0.0, 1.0]])
def test_embedding_rejects_float_ids(ids):
    """Float ids were truncated (1.7 -> row 1) and wrapped silently; ``table[ids]``,
    PyTorch and JAX reject them, as ``cross_entropy`` does float labels."""
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    with pytest.raises(rlx.RlxError, match="integer"):
        rlx.jit(lambda t: rlx.nn.embedding(t, ids))(table)
    with pytest.raises(rlx.RlxError, match="integer"):
        rlx.jit(lambda t, i: rlx.nn.embedding(t, i))(table, np.asarray(ids, np.float32))


def test_embedding_integer_ids_still_work():
    table = np.arange(6, dtype=np.float32).reshape(3, 2)
    for ids in ([2, -1, 0], np.array([[0, -3]], np.int64), np.array([1], np.uint8)):
        got = rlx.jit(lambda t, ids=ids: rlx.nn.embedding(t, ids))(table)
        np.testing.assert_array_equal(got, table[np.asarray(ids)])


# ---------------------------------------------------------------- concat


def test_concat_accepts_a_generator():
    """``concat(x[i:i + 1] for i in ...)``: the generator was consumed picking the
    builder, then concat got no operands ("needs at least one operand")."""
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    got = rlx.jit(lambda x: rlx.nn.concat((x[i:i + 1] * (i + 1) for i in range(3)), 0))(x)
    np.testing.assert_array_equal(got, x * np.array([[1], [2], [3]], np.float32))


def test_concat_numpy_operands_take_the_tensor_dtype():
    """A numpy (f64) array among f32 tensors becomes an f32 constant, as with the
    operators (``x + np.zeros(3)``); it was a dtype-mismatch error."""
    x = np.ones(2, np.float32)
    got = rlx.jit(lambda x: rlx.nn.concat([np.zeros(2), x, np.array([5, 6])]))(x)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [0, 0, 1, 1, 5, 6])
    g = rlx.grad(lambda x: (rlx.nn.concat([np.zeros(2), x]) * np.arange(4.0)).sum())(x)
    np.testing.assert_array_equal(g, [2, 3])
    # floats never truncate silently into an integer concat
    with pytest.raises(rlx.RlxError, match="element type"):
        rlx.jit(lambda i: rlx.nn.concat([np.array([0.5]), i]))(np.ones(2, np.int32))


def test_integer_tensor_to_a_negative_literal_power_is_a_clear_error():
    """numpy raises for ``int_array ** -1``; the traced form must not silently give 1."""
    with pytest.raises(rlx.RlxError, match="negative integer powers"):
        rlx.jit(lambda a: a ** -1)(np.arange(1, 4, dtype=np.int32))
    np.testing.assert_array_equal(rlx.jit(lambda a: a ** 2)(np.arange(1, 4, dtype=np.int32)),
                                  np.arange(1, 4, dtype=np.int32) ** 2)
