"""Findings of a numerics review (attention masks, losses, activations, promotion, numpy
protocol functions), each against torch, JAX or numpy."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import rlx_mlir as rlx

RNG = np.random.default_rng(0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_log1p_edges(dtype):
    """-1 -> -inf, inf -> inf (the rounding correction was -inf * 0 and inf / inf)."""
    x = np.array([-1.0, np.inf, 1e-10, 3.0, -0.5], dtype)
    for got in (rlx.nn.log1p(x), rlx.jit(rlx.nn.log1p)(x)):
        np.testing.assert_array_equal(got[:2], [-np.inf, np.inf])
        np.testing.assert_allclose(got[2:], np.log1p(x[2:]), rtol=1e-6)


def test_a_bool_bias_mask_keeps_keys_as_torch_sdpa():
    """A boolean mask given as a bias keeps the keys where it is True (0, else -inf), as
    ``F.scaled_dot_product_attention``'s ``attn_mask`` (it was added as 0/1)."""
    q = RNG.standard_normal((2, 5, 8)).astype(np.float32)
    mask = np.tril(np.ones((5, 5), bool))
    tq = torch.tensor(q).reshape(2, 5, 2, 4).transpose(1, 2)
    want = F.scaled_dot_product_attention(tq, tq, tq, attn_mask=torch.tensor(mask))
    want = want.transpose(1, 2).reshape(2, 5, 8).numpy()
    closed = rlx.jit(lambda q: rlx.nn.attention(q, q, q, 2, mask=mask, mask_kind="bias"))(q)
    traced = rlx.jit(lambda q, m: rlx.nn.attention(q, q, q, 2, mask=m, mask_kind="bias"))(q, mask)
    eager = rlx.nn.attention(q, q, q, 2, mask=np.broadcast_to(mask, (2, 2, 5, 5)).copy())
    for got in (closed, traced, eager):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_softmax_over_every_element_and_gelu_spellings():
    """``axis=None`` normalises over all elements (JAX); gelu takes torch's strings."""
    x = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(rlx.nn.softmax(x, axis=None), F.softmax(
        torch.tensor(x).reshape(-1), 0).reshape(2, 3).numpy(), rtol=1e-6)
    np.testing.assert_allclose(rlx.nn.log_softmax(x, axis=None).sum(), F.log_softmax(
        torch.tensor(x).reshape(-1), 0).sum().item(), rtol=1e-6)
    one = np.float32(1.0)
    assert rlx.nn.gelu(one, "none") == pytest.approx(F.gelu(torch.tensor(1.0)).item(), 1e-6)
    assert rlx.nn.gelu(one, "tanh") == pytest.approx(
        F.gelu(torch.tensor(1.0), approximate="tanh").item(), 1e-6)
    with pytest.raises(rlx.RlxError, match="approximate='exact' must be 'none' or 'tanh'"):
        rlx.nn.gelu(one, "exact")


def test_empty_constants_and_attention_cross_entropy_argument_errors():
    """An empty numpy constant compiles (it crashed the constant hoisting); a zero head
    count, empty sequences and rank-0 logits are located errors."""
    empty = np.zeros(0, np.float32)
    assert rlx.jit(lambda x: x + empty)(empty).shape == (0,)
    assert rlx.jit(lambda x: rlx.nn.cross_entropy(x, np.zeros(0, np.int32), reduction="sum"))(
        np.zeros((0, 3), np.float32)) == 0.0
    q = RNG.standard_normal((1, 4, 4)).astype(np.float32)
    none = np.zeros((1, 0, 4), np.float32)
    for call, message in (
            (lambda: rlx.nn.attention(q, q, q, 0), "num_heads must be a positive int, got 0"),
            (lambda: rlx.nn.attention(q, none, none, 1), "empty sequences are not supported"),
            (lambda: rlx.nn.cross_entropy(np.float32(1), np.int32(0)),
             r"logits must be \[N, C\]")):
        with pytest.raises(rlx.RlxError, match=message):
            call()


def test_division_keeps_half_precision_and_narrow_ints_promote_with_numpy_ints():
    """``f16 / i32`` is f16 (as ``f16 * i32`` and JAX), an int tensor over a numpy f16 too;
    an i8 tensor with a numpy int32 is i32 (numpy values are not weak in JAX), while a
    Python int keeps i8; mixed integer concat widens."""
    import jax.numpy as jnp

    h, i = np.float16([1, 2, 3]), np.int32([3, 3, 3])
    for f, args in ((lambda h, i: h / i, (h, i)), (lambda h, i: i / h, (h, i)),
                    (lambda h, i: h / i, (h.astype(ml_dtypes.bfloat16), i)),
                    (lambda h, i: i / np.float16(2), (h, i))):
        got = rlx.jit(f)(*args)
        want = f(*(jnp.asarray(a) for a in args))
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float32), np.asarray(want, np.float32),
                                   rtol=1e-2)
    small = np.array([100, 1], np.int8)
    wide = rlx.jit(lambda x: x + np.array([100, 100], np.int32))(small)
    assert wide.dtype == np.int32 and wide.tolist() == [200, 101]
    assert rlx.jit(lambda x: x + 1)(small).dtype == np.int8
    both = rlx.jit(lambda a, b: rlx.nn.concat([a, b]))(np.array([1], np.int32),
                                                      np.array([3], np.int64))
    assert both.dtype == np.int64 and both.tolist() == [1, 3]


def test_integer_norm_and_the_exponent_gradient_at_zero():
    """``norm`` of integers squares in float (it wrapped in i32 to NaN); ``d(x ** e)/de``
    is 0 at x = 0, as JAX's (it was 0 * -inf)."""
    import jax

    big = np.array([3, 4, 50000], np.int32)
    assert rlx.jit(rlx.linalg.norm)(big) == pytest.approx(np.linalg.norm(big), rel=1e-6)
    e, x = np.float32([2, 2, -1]), np.float32([0, 1, 2])
    got = rlx.grad(lambda e, x: (x ** e).sum())(e, x)
    np.testing.assert_allclose(got, jax.grad(lambda e, x: (x ** e).sum())(e, x), rtol=1e-6)
    _, tangent = rlx.jvp(lambda e: x ** e, (e,), (np.ones(3, np.float32),))
    np.testing.assert_allclose(tangent, got, rtol=1e-6)


def test_numpy_protocol_functions_on_traced_tensors():
    """``np.var/std`` (numpy's keyword order), ``np.any/all`` with ``axis``,
    ``np.argmax`` and ``np.transpose`` / ``transpose(None)`` on traced tensors."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    f = rlx.jit(lambda t: (np.var(t), np.std(t, axis=0), np.any(t > 5, axis=1),
                           np.all(t > -1), np.argmax(t), np.transpose(t), t.transpose(None),
                           np.var(t, ddof=1, keepdims=True)))
    wants = (np.var(x), np.std(x, axis=0), np.any(x > 5, axis=1), np.all(x > -1),
             np.argmax(x), x.T, x.T, np.var(x, ddof=1, keepdims=True))
    for got, want in zip(f(x), wants, strict=True):
        assert np.shape(got) == np.shape(want)
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with pytest.raises(rlx.RlxError, match="out= is not supported"):
        rlx.jit(lambda t: t.var(out=np.zeros(())))(x)


def test_complex_truth_floor_and_random_argument_checks():
    """``where`` on a complex condition is ``z != 0`` natively too (it crashed the
    lowering); ``floor``/``ceil`` refuse complex (they returned it unchanged); ``uniform``
    keeps the dtype asked for with numpy f64 bounds; ``bernoulli`` checks ``p`` against
    ``shape``; categorical never draws a class of logit -inf (u = 0 gave -inf noise)."""
    z = np.array([0j, 1j, 1.5 - 2j], np.complex64)
    np.testing.assert_array_equal(rlx.jit(lambda v: rlx.nn.where(v, 1.0, 0.0))(z), [0, 1, 1])
    for call in (lambda: rlx.nn.floor(z), lambda: rlx.jit(rlx.nn.ceil)(z)):
        with pytest.raises(rlx.RlxError, match="complex numbers are not ordered"):
            call()
    assert rlx.random.uniform(1, (3,), "f32", maxval=np.float64(10)).dtype == np.float32
    with pytest.raises(rlx.RlxError, match=r"p of shape \[2, 3\] does not broadcast to shape \[3\]"):
        rlx.random.bernoulli(0, np.full((2, 3), 0.5), (3,))
    assert rlx.random.bernoulli(0, np.array([0.1, 0.9, 0.5]), (4, 3)).shape == (4, 3)
    with pytest.raises(rlx.RlxError, match="rate must be a number and training a bool"):
        rlx.nn.dropout(np.ones(3, np.float32), "0.5", 0)
    # the row whose uniform draw is exactly 0 (found by the reviewer): class 0 is -inf
    logits = np.repeat([[-np.inf, 0.0]], 8203904, 0).astype(np.float32)
    assert rlx.random.uniform(0, (8203904, 2))[8203903, 1] == 0.0
    assert rlx.random.categorical(0, logits)[8203903] == 1


def test_fft_random_and_index_argument_handling():
    """fftn's ``s`` must be a sequence and ``axes`` may be a numpy array; fftshift of numpy
    data inside a trace is numpy's; categorical/uniform reject bad axes and bounds; an i8
    traced index works inside a tuple as alone."""
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(rlx.fft.fftn(x, axes=np.array([0, 1])), np.fft.fftn(x),
                               rtol=1e-4, atol=1e-4)
    shifted = rlx.jit(lambda s: rlx.fft.fftshift(x) * s)(np.float32(2))
    np.testing.assert_allclose(shifted, np.fft.fftshift(x) * 2)
    logits = np.zeros((2, 3), np.float32)
    for call, message in (
            (lambda: rlx.fft.fftn(x, s=3), "s must be a sequence of lengths"),
            (lambda: rlx.fft.fftshift(x, axes=1.0), "axes must be an int or a sequence"),
            (lambda: rlx.random.categorical(0, logits, axis=None), "axis must be an int"),
            (lambda: rlx.random.uniform(0, (3,), minval="a"), "minval must be a number")):
        with pytest.raises(rlx.RlxError, match=message):
            call()
    table = np.arange(12, dtype=np.float32).reshape(3, 4)
    picked = rlx.jit(lambda t, i: t[:, i])(table, np.array([1, 3], np.int8))
    np.testing.assert_array_equal(picked, table[:, [1, 3]])


def test_complex_sign_log1p_variance_and_unordered_activations():
    """numpy 2's ``sign(z) = z / |z|`` and complex ``log1p``; ``var``/``std`` of complex
    data are real (the mean of ``|z - mean|^2``); ordered activations name themselves."""
    z = np.array([0j, 3 + 4j, -1e-8 + 2e-8j, -2 + 0j], np.complex64)
    np.testing.assert_allclose(rlx.jit(rlx.nn.sign)(z), np.sign(z), atol=1e-6)
    np.testing.assert_allclose(rlx.jit(rlx.nn.log1p)(z[1:]), np.log1p(z[1:]), rtol=1e-5)
    c = (RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))).astype(np.complex64)
    got = rlx.jit(lambda t: (t.var(), t.std(axis=0), t.var(axis=1, ddof=1)))(c)
    for g, w in zip(got, (np.var(c), np.std(c, axis=0), np.var(c, axis=1, ddof=1)), strict=True):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-5)
    for name in ("softplus", "leaky_relu", "elu"):
        with pytest.raises(rlx.RlxError, match=f"{name}: complex numbers are not ordered"):
            getattr(rlx.nn, name)(z)


# ---------------------------------------------------------------- review: linalg / complex


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_and_interpreted_solves_agree_bit_for_bit(dtype):
    """The interpreter runs the compiled kernel's LU operation for operation: a matrix
    singular in exact arithmetic ([[1, 2, 3], [4, 5, 6], [7, 8, 9]]: rounding leaves a tiny
    pivot) gave +-4.5e15 natively but NaN eagerly (numpy's LAPACK met an exact 0)."""
    rng = np.random.default_rng(3)
    cases = [(np.arange(1.0, 10.0).reshape(3, 3), np.array([1.0, 0.0, 0.0])),
             (rng.standard_normal((4, 7, 7)), rng.standard_normal((4, 7, 3)))]
    for a, b in cases:
        a, b = a.astype(dtype), b.astype(dtype)
        native = rlx.jit(rlx.linalg.solve)(a, b)
        np.testing.assert_array_equal(native, rlx.linalg.solve(a, b))
    np.testing.assert_allclose(native, np.linalg.solve(a, b), rtol=1e-3, atol=1e-4)
    zero_column = np.array([[0.0, 1.0], [0.0, 2.0]], dtype)
    for solve in (rlx.linalg.solve, rlx.jit(rlx.linalg.solve)):
        assert np.isnan(solve(zero_column, np.ones(2, dtype))).all()


def test_solve_takes_integer_matrices_as_f32():
    a, b = np.array([[2, 0], [0, 4]], np.int32), np.array([2, 4], np.int32)
    for solve in (rlx.linalg.solve, rlx.jit(rlx.linalg.solve)):
        got = solve(a, b)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, [1.0, 1.0])


def test_complex_helpers_take_python_numbers():
    """``conj(1+2j)`` and ``complex_norm_sq(1+2j)`` raised AttributeError (eagerly and
    inside jit, where a constant argument now folds at trace time)."""
    assert rlx.nn.conj(1 + 2j) == 1 - 2j
    assert rlx.nn.complex_norm_sq(1 + 2j) == 5.0
    np.testing.assert_allclose(rlx.nn.exp(1j), np.exp(1j), rtol=1e-6)
    got = rlx.jit(lambda x: x * rlx.nn.complex_norm_sq(1 + 2j))(np.ones(2, np.float32))
    np.testing.assert_array_equal(got, [5.0, 5.0])
    for fn in (rlx.nn.conj, rlx.nn.complex_norm_sq):  # a list: the error naming np.asarray
        with pytest.raises(rlx.RlxError, match="np.asarray"):
            fn([1j, 2])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_native_round_is_half_away_from_zero_exactly(dtype):
    """Round is lowered as ``trunc`` plus ``copysign(1, x)`` where ``|x - trunc(x)| >=
    0.5`` (``math.round`` became a libm call per lane): ties, the largest float below 0.5,
    integers past 2^23, signed zeros, infinities and NaN as the interpreter has them."""
    below_half = np.nextafter(dtype(0.5), dtype(0))
    x = np.array([0.5, -0.5, 1.5, -2.5, below_half, -below_half, 2.0**23 + 1, 1e30, -0.0,
                  np.inf, -np.inf, np.nan, 0.7, -0.7, 8388607.5], dtype)
    x = np.concatenate([x, np.arange(-40, 40, dtype=dtype) / 4])
    wide = np.floor(np.abs(x.astype(np.longdouble)) + np.longdouble(0.5))  # no rounding
    want = np.where(np.isfinite(x), np.copysign(wide, x), x).astype(dtype)
    fns = {"round": lambda x: x.builder.round(x), "floor": rlx.nn.floor,
           "floordiv": lambda x: x // 2.0}
    with np.errstate(invalid="ignore"):
        wants = {"round": want, "floor": np.floor(x), "floordiv": x // 2.0}
    for name, fn in fns.items():
        got = rlx.jit(fn)(x)
        np.testing.assert_array_equal(got, wants[name], err_msg=name)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(wants[name]), err_msg=name)


def test_long_complex_sums_accumulate_wide():
    """A c64 sum or mean of 2^22 elements is as accurate as numpy's (it was off by 2e-5:
    f32 sums of that length accumulated in f64, complex ones did not)."""
    rng = np.random.default_rng(4)
    n = 1 << 22
    z = ((rng.random(n) + 1) + 1j * (rng.random(n) + 1)).astype(np.complex64)
    exact = z.astype(np.complex128).sum()
    total, mean = rlx.jit(lambda z: (z.sum(), z.mean()))(z)
    assert total.dtype == np.complex64 and mean.dtype == np.complex64
    assert abs(complex(total) - exact) / abs(exact) < 1e-6
    assert abs(complex(mean) * n - exact) / abs(exact) < 1e-6


def test_long_dot_products_accumulate_wide():
    """``a @ b`` of 2M f32 elements was off by 5e-4 (a running f32 sum) where
    ``(a * b).sum()`` was off by 2e-8; a few rows times a long vector too."""
    rng = np.random.default_rng(5)
    a, b = (rng.random(1 << 21).astype(np.float32) for _ in range(2))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert abs(float(rlx.jit(lambda a, b: a @ b)(a, b)) - exact) / exact < 1e-6
    m = rng.random((3, 1 << 20)).astype(np.float32)
    got = rlx.jit(lambda m, v: m @ v)(m, b[: 1 << 20])
    want = m.astype(np.float64) @ b[: 1 << 20].astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_log_keeps_its_real_part_near_the_unit_circle(dtype):
    """``Re log z`` near ``|z| = 1`` comes from ``log1p((a - 1)(a + 1) + b^2) / 2``:
    ``ln`` of the rounded modulus gave 0 for ``1 + 1e-4 i`` (numpy 5e-9) and 3e-5 relative
    errors nearby; special values stay numpy's."""
    rng = np.random.default_rng(6)
    ring = np.exp(1j * rng.uniform(-4, 4, 4000)) * (1 + rng.standard_normal(4000) * 1e-3)
    z = np.concatenate([ring, [1 + 1e-4j, 0.9999 + 0.01j, 1 + 1e-9j, 2.5, 0.3 - 0.1j, 1e-30j,
                               3e38 + 3e38j, 0, -1, complex(-1, -0.0), np.inf, np.nan]]).astype(dtype)
    with np.errstate(all="ignore"):
        got, want = rlx.jit(rlx.nn.log)(z), np.log(z.astype(np.clongdouble))
    finite = np.isfinite(want.real)
    err, size = np.abs(got.real - want.real)[finite], np.abs(want.real)[finite]
    assert np.all(err[size == 0] == 0)
    assert np.max(err[size > 0] / size[size > 0]) < (1e-6 if dtype == np.complex64 else 1e-8)
    np.testing.assert_allclose(got.imag, want.imag.astype(got.imag.dtype), rtol=1e-6)
    assert np.array_equal(got[~finite], want[~finite].astype(dtype), equal_nan=True)


def test_dot_general_takes_jax_keyword_arguments():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    dims = (((1,), (1,)), ((), ()))
    got = rlx.dot_general(a, a, dims, precision=None, preferred_element_type=np.float64)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, a.astype(np.float64) @ a.T)
