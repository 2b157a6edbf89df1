"""Tensors combined with numpy arrays, Python lists and numbers while tracing: ``@`` with
a 1-d or numpy operand on either side, ``//`` and ``%``, and numpy's reductions (numbers
against numpy and JAX)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import rlx_mlir as rlx

RNG = np.random.default_rng(11)


def rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- @ with numpy operands

W = rand(3, 2)
V = rand(3)


@pytest.mark.parametrize("fn, arg, want", [
    (lambda v: v @ W, V, V @ W),                 # 1-d tensor @ 2-d numpy
    (lambda w: w.T @ V, W, W.T @ V),             # 2-d tensor @ 1-d numpy
    (lambda v: W.T @ v, V, W.T @ V),             # 2-d numpy @ 1-d tensor
    (lambda w: V @ w, W, V @ W),                 # 1-d numpy @ 2-d tensor
    (lambda v: v @ V, V, V @ V),                 # 1-d @ 1-d: a 0-d dot product
    (lambda v: V @ v, V, V @ V),
    (lambda x: x @ V, rand(4, 5, 3), None),      # batched matrix @ vector
    (lambda v: v @ np.ones((4, 3, 2), np.float32), V, None),  # vector @ batched matrices
])
def test_matmul_with_a_numpy_operand_follows_numpy(fn, arg, want):
    want = fn(arg) if want is None else want
    got = rlx.jit(fn)(arg)
    assert got.shape == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_matmul_with_a_python_list_operand():
    x = rand(2, 3)
    np.testing.assert_allclose(rlx.jit(lambda a: a @ [[1.0], [2.0], [3.0]])(x),
                               x @ np.array([[1.0], [2.0], [3.0]]), rtol=1e-6)
    np.testing.assert_allclose(rlx.jit(lambda a: [1.0, 2.0] @ a)(x),
                               np.array([1.0, 2.0]) @ x, rtol=1e-6)


@pytest.mark.parametrize("fn", [lambda x: x @ W.astype(np.float64),
                                lambda x: W.T.astype(np.float64) @ x.T,
                                lambda x: x + W.T.astype(np.float64)])
def test_f64_numpy_operand_promotes_in_both_orders_like_add(fn):
    """A numpy operand takes the tensor's dtype whichever side it is on, as with ``+``
    (JAX's default: an f64 numpy array is f32)."""
    x = rand(2, 3)
    got = rlx.jit(fn)(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, fn(x.astype(np.float64)), rtol=1e-5)


def test_int_tensor_at_float_numpy_is_f32():
    i = np.arange(6, dtype=np.int32).reshape(2, 3)
    got = rlx.jit(lambda a: a @ W)(i)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, i @ W, rtol=1e-5)


def test_grad_and_hvp_of_a_vector_at_a_closed_over_weight_match_jax():
    t = rand(3)
    g = rlx.grad(lambda v: rlx.nn.tanh(v @ W).sum())(V)
    np.testing.assert_allclose(g, jax.grad(lambda v: jnp.tanh(v @ W).sum())(V), rtol=1e-5)
    g = rlx.grad(lambda w: rlx.nn.tanh(w.T @ V).sum())(W)
    np.testing.assert_allclose(g, jax.grad(lambda w: jnp.tanh(w.T @ V).sum())(W), rtol=1e-5)

    primal, tangent = rlx.jvp(rlx.grad(lambda v: rlx.nn.tanh(v @ W).sum()), (V,), (t,))
    want_p, want_t = jax.jvp(jax.grad(lambda v: jnp.tanh(v @ W).sum()), (V,), (t,))
    np.testing.assert_allclose(primal, want_p, rtol=1e-5)
    np.testing.assert_allclose(tangent, want_t, rtol=1e-4, atol=1e-6)

    _, tangent = rlx.jvp(rlx.grad(lambda v: rlx.nn.tanh(W.T @ v).sum()), (V,), (t,))
    _, want_t = jax.jvp(jax.grad(lambda v: jnp.tanh(W.T @ v).sum()), (V,), (t,))
    np.testing.assert_allclose(tangent, want_t, rtol=1e-4, atol=1e-6)


# ---------------------------------------------------------------- // and %

FLOATS_A = np.array([7.0, -7.0, 7.0, -7.0, 1.0, 0.5, -0.5, 0.0, -0.0, 3.0, 1e-9, -1e-9,
                     5.5, 1.0, np.inf, 1.0, -1.0, 2.0], np.float32)
FLOATS_B = np.array([2.0, 2.0, -2.0, -2.0, 0.1, 1.0, 1.0, 3.0, -3.0, 1.5, 1.0, 1.0,
                     -0.25, 0.0, 2.0, np.inf, np.inf, np.nan], np.float32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floordiv_and_mod_match_numpy(dtype):
    a, b = FLOATS_A.astype(dtype), FLOATS_B.astype(dtype)
    q, r = rlx.jit(lambda a, b: (a // b, a % b))(a, b)
    with np.errstate(all="ignore"):
        want_q, want_r = a // b, a % b
    assert q.dtype == dtype and r.dtype == dtype
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(r, want_r)
    np.testing.assert_array_equal(np.signbit(r[~np.isnan(r)]),
                                  np.signbit(want_r[~np.isnan(want_r)]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1.0, 1e3, 1e9])
def test_random_float_divmod_matches_numpy_bit_for_bit(dtype, scale):
    """Exact while |a / b| < 2**53: fmod's product is computed exactly (1.0 % 0.1 is
    0.09999999, not 0 as ``a - floor(a / b) * b`` would give)."""
    a = rand(2000, dtype=dtype) * dtype(scale)
    b = rand(2000, dtype=dtype)
    q, r = rlx.jit(lambda a, b: divmod(a, b))(a, b)
    np.testing.assert_array_equal(q, a // b)
    np.testing.assert_array_equal(r, a % b)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_int_floordiv_and_mod_match_numpy(dtype):
    a = np.array([7, -7, 7, -7, 0, 6, -6, 5, 1, -1], dtype)
    b = np.array([2, 2, -2, -2, 3, 3, 3, 0, 7, 7], dtype)
    q, r = rlx.jit(lambda a, b: (a // b, a % b))(a, b)
    with np.errstate(all="ignore"):
        want_q, want_r = a // b, a % b
    assert q.dtype == dtype
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(r, want_r)


def test_floordiv_and_mod_with_numbers_on_either_side():
    x = rand(5) * 10
    i = np.array([-5, -1, 0, 4, 9], np.int32)
    got = rlx.jit(lambda x, i: (x // 2.0, x % 3, 7.0 // x, 10 % i[3:], i // 2, i % 2.5))(x, i)
    want = (x // np.float32(2.0), x % np.float32(3), np.float32(7.0) // x, 10 % i[3:],
            i // 2, i.astype(np.float32) % np.float32(2.5))  # int % float: f32 (JAX)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_grad_of_mod_matches_jax():
    x = rand(6) * 5
    g = rlx.grad(lambda x: (x % 1.5 * x).sum())(x)
    np.testing.assert_allclose(g, jax.grad(lambda x: (x % 1.5 * x).sum())(x), rtol=1e-5)


# ---------------------------------------------------------------- reductions


def test_numpy_reductions_of_a_tensor():
    x = rand(3, 4)
    got = rlx.jit(lambda a: (np.sum(a), np.mean(a, axis=0), np.max(a, axis=1),
                             np.min(a), np.prod(a, axis=1, keepdims=True)))(x)
    want = (x.sum(), x.mean(0), x.max(1), x.min(), x.prod(1, keepdims=True))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5)
    got = rlx.jit(lambda a: a.sum(dtype=np.float64))(x)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, x.sum(dtype=np.float64), rtol=1e-6)


def test_bool_sum_counts_as_int32_and_int_mean_is_f32():
    x = rand(3, 4)
    got = rlx.jit(lambda a: ((a > 0).sum(), (a > 0).sum(axis=1), (a > 0).mean()))(x)
    assert got[0].dtype == np.int32 and got[1].dtype == np.int32
    assert int(got[0]) == int((x > 0).sum())
    np.testing.assert_array_equal(got[1], (x > 0).sum(1))
    np.testing.assert_allclose(got[2], (x > 0).mean(), rtol=1e-6)
    i = np.arange(7, dtype=np.int32)
    got = rlx.jit(lambda a: a.mean())(i)
    assert got.dtype == np.float32 and float(got) == 3.0
    assert jnp.mean(i).dtype == got.dtype


def test_sum_over_no_axis_is_the_identity():
    x = rand(3, 4)
    got = rlx.jit(lambda a: (a.sum(axis=()), a.max(axis=()), a.mean(axis=(), keepdims=True)))(x)
    for g in got:
        np.testing.assert_array_equal(g, x)


def test_grad_and_jvp_of_floordiv_and_mod_wrt_divisor_match_jax():
    x, y = rand(6) * 5, rand(6) + 3.0
    f = lambda x, y: (x % y * x + (x // y) * y).sum()  # noqa: E731
    g = rlx.grad(f, argnums=(0, 1))(x, y)
    want = jax.grad(f, argnums=(0, 1))(x, y)
    for a, b in zip(g, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    t = rand(6)
    _, got = rlx.jvp(lambda x: x % 1.5, (x,), (t,))
    np.testing.assert_allclose(got, jax.jvp(lambda x: x % 1.5, (x,), (t,))[1], rtol=1e-6)


def test_f32_tensor_at_f64_tensor_is_f64_in_both_orders():
    x, w = rand(2, 3), rand(3, dtype=np.float64)
    for fn in (lambda x, w: x @ w, lambda x, w: w @ x.T):
        got = rlx.jit(fn)(x, w)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, fn(x.astype(np.float64), w), rtol=1e-6)


# ---------------------------------------------------------------- where with number branches


@pytest.mark.parametrize("branches, scale, dtype", [
    ((1.0, 0.0), False, np.float32), ((1, 0), False, np.int32),
    ((1, 2.5), False, np.float32), ((2.0, 0.5), True, np.float32)])
def test_where_with_two_number_branches_takes_jax_default_dtypes(branches, scale, dtype):
    """Python numbers are f32 / i32 (JAX's defaults without x64), so an f32 model stays
    f32 (they were f64 / i64)."""
    x = rand(5)
    got = rlx.jit(lambda x: rlx.nn.where(x > 0, *branches) * (x if scale else 1))(x)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, np.where(x > 0, *branches) * (x if scale else 1))
