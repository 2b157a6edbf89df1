"""Random numbers (rlx.rng_uniform, rlx.rng_normal, rlx.random, rlx.nn.dropout): native
code draws the interpreter's numbers bit for bit (uniform) or to rounding (normal), with
the right distribution, fresh numbers per key, no gradient, and vmap over keys."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import tensor
from rlx_mlir.runtime.jit import compile as jit_compile


def _sampler(op: str, shape, dtype: str):
    b = rlx.Builder("draw")
    b.ret(b.emit(op, b.input("key", (), "i32"), out=[tensor(shape, dtype)]))
    return b.module


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op", ["rng_uniform", "rng_normal"])
@pytest.mark.parametrize("shape", [(), (1,), (7, 3), (64, 1, 4096)])
def test_native_draws_the_interpreters_numbers(op, dtype, shape):
    """Whatever the loops' tiling and thread split, element i is a function of (key, i)."""
    module = _sampler(op, shape, dtype)
    native = jit_compile(module)(np.int32(-12345))[0]
    (interpreted,) = rlx.interpret(module, np.int32(-12345))
    assert native.shape == interpreted.shape == shape
    assert native.dtype == interpreted.dtype == np.dtype({"f32": np.float32, "f64": np.float64}[dtype])
    if op == "rng_uniform":
        np.testing.assert_array_equal(native, interpreted)
    else:
        np.testing.assert_allclose(native, interpreted, rtol=1e-5, atol=1e-6)


def test_distributions():
    """1M samples: uniform mean, variance and a 256-bin chi-square; normal moments and
    tail fractions; neighbours and neighbouring keys uncorrelated."""
    n = 1 << 20
    u = rlx.jit(lambda k: rlx.random.uniform(k, n))(np.int32(1)).astype(np.float64)
    assert u.min() >= 0 and u.max() < 1
    assert abs(u.mean() - 0.5) < 3e-3 and abs(u.var() - 1 / 12) < 1e-3
    counts, _ = np.histogram(u, bins=256)
    chi2 = ((counts - n / 256) ** 2 / (n / 256)).sum()
    assert chi2 < 255 + 5 * np.sqrt(2 * 255)
    z = rlx.jit(lambda k: rlx.random.normal(k, n))(np.int32(2)).astype(np.float64)
    assert abs(z.mean()) < 5e-3 and abs(z.std() - 1) < 5e-3
    assert abs((np.abs(z) > 1.96).mean() - 0.05) < 2e-3
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 5e-3
    u2 = rlx.jit(lambda k: rlx.random.uniform(k, n))(np.int32(2)).astype(np.float64)
    assert abs(np.corrcoef(u, u2)[0, 1]) < 5e-3


def test_a_new_key_gives_new_numbers_from_one_compiled_program():
    step = rlx.jit(lambda k: rlx.random.normal(k, (4, 4)))
    first, again, other = step(np.int32(0)), step(np.int32(0)), step(np.int32(1))
    np.testing.assert_array_equal(first, again)
    assert not np.isclose(first, other).any()
    np.testing.assert_allclose(first, rlx.random.normal(0, (4, 4)), rtol=1e-5)  # eager


def test_split_keys_are_distinct_and_usable_in_a_trace():
    @rlx.jit
    def draw(key):
        k1, k2, k3 = rlx.random.split(key, 3)
        return rlx.random.uniform(k1, 3), rlx.random.uniform(k2, 3), k3

    a, b, k3 = draw(np.int32(9))
    assert not np.isclose(a, b).any() and k3.dtype == np.int32
    keys = rlx.random.split(9, 3)
    np.testing.assert_array_equal(a, rlx.random.uniform(int(keys[0]), 3))
    assert len({int(k) for k in rlx.random.split(0, 64)}) == 64


def test_uniform_range_bernoulli_and_f64():
    u = rlx.random.uniform(3, (1000,), "f64", minval=-2.0, maxval=5.0)
    assert u.dtype == np.float64 and u.min() >= -2 and u.max() < 5
    assert len(np.unique(u)) == 1000
    hits = rlx.random.bernoulli(4, 0.3, (100000,))
    assert hits.dtype == np.bool_ and abs(hits.mean() - 0.3) < 0.01


def test_dropout_masks_scales_and_its_gradient_follows_the_mask():
    x = np.random.default_rng(0).standard_normal((256, 64)).astype(np.float32)
    y = rlx.jit(lambda x, k: rlx.nn.dropout(x, 0.25, k))(x, np.int32(5))
    dropped = y == 0
    assert abs(dropped.mean() - 0.25) < 0.01
    np.testing.assert_allclose(y[~dropped], x[~dropped] / 0.75, rtol=1e-6)
    g = rlx.grad(lambda x, k: (rlx.nn.dropout(x, 0.25, k) ** 2).sum())(x, np.int32(5))
    np.testing.assert_allclose(g, np.where(dropped, 0, 2 * y / 0.75), rtol=1e-5)
    np.testing.assert_array_equal(rlx.jit(lambda x: rlx.nn.dropout(x, 0.5, 1, training=False))(x), x)
    np.testing.assert_array_equal(rlx.jit(lambda x: rlx.nn.dropout(x, 1.0, 1))(x), 0 * x)


def test_dropout_mean_matches_torch_in_expectation():
    """E[dropout(x)] = x, as torch's (different masks: same law)."""
    x = np.full((200000,), 3.0, np.float32)
    ours = rlx.jit(lambda x, k: rlx.nn.dropout(x, 0.4, k))(x, np.int32(8))
    theirs = torch.nn.functional.dropout(torch.tensor(x), 0.4).numpy()
    assert abs(ours.mean() - theirs.mean()) < 0.05 and set(np.unique(ours)) == {0.0, 5.0}


def test_vmap_over_keys_draws_per_element():
    """One batched op (keys [B] -> samples [B, ...]), not one op per element."""
    xs, keys = np.ones((4, 8), np.float32), np.arange(4, dtype=np.int32)
    drop = rlx.vmap(lambda x, k: rlx.nn.dropout(x, 0.5, k))
    assert rlx.jit(drop).lower(xs, keys).as_text().count("rlx.rng_uniform") == 1
    batched = drop(xs, keys)
    for i in range(4):
        np.testing.assert_array_equal(batched[i], rlx.nn.dropout(xs[i], 0.5, int(keys[i])))
    shared = rlx.vmap(lambda x: rlx.nn.dropout(x, 0.5, 7))(xs)
    assert (shared == shared[0]).all()


def test_samples_have_no_gradient():
    """d/dx of x * noise is the noise; the key (an integer) gets none."""
    def f(x, k):
        return (x * rlx.random.normal(k, 3)).sum()

    x = np.ones(3, np.float32)
    np.testing.assert_allclose(rlx.grad(f)(x, np.int32(2)), rlx.random.normal(2, 3), rtol=1e-6)


@pytest.mark.parametrize("call,message", [
    (lambda: rlx.jit(lambda k: rlx.random.normal(k, 3))(np.float32(1)),
     "a random key must be an integer scalar"),
    (lambda: rlx.jit(lambda k: rlx.random.normal(k, 3))(np.int32([1, 2])),
     "a random key must be an integer scalar (rlx.random.key(seed), a Python int, np.int64, "
     "or a 0-d integer tensor, e.g. an element of rlx.random.split); got i32[2]"),
    (lambda: rlx.random.normal(1, 3, dtype="i32"), "random samples are f32 or f64; got 'i32'"),
    (lambda: rlx.random.normal(1, 3, dtype=np.int64), "random samples are f32 or f64"),
    (lambda: rlx.nn.dropout(np.ones(3, np.float32), 1.5, 0), "dropout: rate must be in [0, 1], got 1.5"),
])
def test_misuse_is_a_clear_error(call, message):
    with pytest.raises(RlxError, match=re.escape(message)):
        call()


def test_a_key_per_row_in_the_ir():
    """``rlx.rng_normal`` of keys [3] into [3, 5]: row r is the sample of key r."""
    b = rlx.Builder("rows")
    b.ret(b.emit("rng_normal", b.input("keys", (3,), "i32"), out=[tensor((3, 5), "f32")]))
    keys = np.int32([4, -7, 2**31 - 1])
    native = jit_compile(b.module)(keys)[0]
    (interpreted,) = rlx.interpret(b.module, keys)
    for r, k in enumerate(keys):
        np.testing.assert_allclose(native[r], rlx.random.normal(int(k), 5), rtol=1e-5)
    np.testing.assert_allclose(native, interpreted, rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- review findings


def test_uniform_never_returns_maxval():
    """u = 1 - 2^-24 scaled into [1, 2) rounds to 2.0 (element 3215751 of key 1)."""
    assert rlx.random.uniform(1, (3215752,), minval=1.0, maxval=2.0).max() < 2.0
    native = rlx.jit(lambda k: rlx.random.uniform(k, (3215752,), minval=1.0, maxval=2.0))
    assert native(np.int32(1)).max() < 2.0


def test_traced_bounds_get_gradients():
    lo = np.float32(5)
    draw = rlx.jit(lambda k, lo: rlx.random.uniform(k, (3,), minval=lo, maxval=lo + 1))
    np.testing.assert_allclose(draw(np.int32(0), lo), 5 + rlx.random.uniform(0, (3,)), rtol=1e-6)
    assert rlx.grad(lambda lo: rlx.random.uniform(0, (3,), minval=lo, maxval=lo + 2).sum())(lo) == 3


def test_concrete_keys_work_eagerly_in_dropout_and_inside_custom_vjp():
    x = np.ones((4, 8), np.float32)
    _, k2 = rlx.random.split(0)
    np.testing.assert_array_equal(rlx.nn.dropout(x, 0.5, k2),
                                  rlx.jit(lambda x, k: rlx.nn.dropout(x, 0.5, k))(x, k2))
    np.testing.assert_array_equal(rlx.nn.dropout(x, 0.5, np.int32(3)),
                                  rlx.nn.dropout(x, 0.5, 3))

    @rlx.custom_vjp
    def noisy(x):
        return x + rlx.random.normal(0, x.shape)

    noisy.defvjp(lambda x: (noisy(x), x), lambda r, g: (g * 2,))
    np.testing.assert_allclose(rlx.jit(noisy)(np.ones(3, np.float32)),
                               rlx.random.normal(0, 3) + 1, rtol=1e-6)


@pytest.mark.parametrize("call,message", [
    (lambda: rlx.jit(lambda x: x + rlx.random.uniform(2**64, (3,)))(np.ones(3, np.float32)),
     "the random key 18446744073709551616 does not fit 64 bits"),
    (lambda: rlx.random.uniform(True, 3), "a random key must be an integer scalar"),
    (lambda: rlx.random.uniform(0, None), "a random shape is a tuple of non-negative ints; got None"),
    (lambda: rlx.random.uniform(0, (-1, 3)), "a random shape is a tuple of non-negative ints"),
    (lambda: rlx.jit(lambda k: rlx.random.split(k, 2000))(np.int32(0)),
     "takes 2001 arrays (arguments and results together); a native call passes at most 1024"),
    (lambda: rlx.jit(lambda x, r: rlx.nn.dropout(x, r, 0))(np.ones(2, np.float32), np.float32(0.5)),
     "dropout: rate and training must be Python values"),
])
def test_review_misuse_is_a_clear_error(call, message):
    with pytest.raises(RlxError, match=re.escape(message)):
        call()


def test_split_children_are_not_the_parents_own_samples():
    parent = (rlx.random.uniform(7, (4,), "f64") * 2.0**31).astype(np.int32)
    children = np.array(rlx.random.split(7, 4))
    assert not np.isin(children, parent).any()
    assert rlx.random.split(key=3) == rlx.random.split(3)


def test_a_key_argument_of_a_custom_vjp_function():
    """bwd's None for an integer argument: zeros of its type (they became f32, a
    verifier error)."""
    @rlx.custom_vjp
    def noisy(x, key):
        return x + rlx.random.normal(key, x.shape)

    noisy.defvjp(lambda x, key: (noisy(x, key), x), lambda r, g: (g * 2, None))
    x = np.ones(3, np.float32)
    np.testing.assert_allclose(rlx.jit(noisy)(x, np.int32(0)), rlx.random.normal(0, 3) + 1,
                               rtol=1e-6)
    np.testing.assert_array_equal(rlx.grad(lambda x, k: noisy(x, k).sum())(x, np.int32(0)),
                                  [2, 2, 2])


def test_categorical_frequencies_follow_the_softmax():
    probs = np.float32([0.1, 0.2, 0.3, 0.4])
    logits = np.broadcast_to(np.log(probs), (200000, 4)).copy()
    ids = rlx.jit(lambda k, logits: rlx.random.categorical(k, logits))(np.int32(3), logits)
    assert ids.dtype == np.int32 and ids.shape == (200000,)
    np.testing.assert_allclose(np.bincount(ids, minlength=4) / len(ids), probs, atol=4e-3)
    by_column = rlx.jit(lambda k, t: rlx.random.categorical(k, t, axis=0))(
        np.int32(4), logits.T.copy())
    np.testing.assert_allclose(np.bincount(by_column, minlength=4) / len(ids), probs, atol=4e-3)
    assert rlx.random.categorical(1, np.log(probs)) == rlx.jit(
        lambda k: rlx.random.categorical(k, np.log(probs)))(np.int32(1))


def test_second_review_findings():
    """categorical with a concrete key inside a trace; 64-bit keys fold the same way
    eagerly and traced (a traced i64 key wrapped to its low bits); bounds that do not
    broadcast; categorical's own errors; a custom_vjp's integer argument stays an integer
    under grad."""
    logits = np.log(np.float32([0.2, 0.8]))
    eager = rlx.random.categorical(0, logits)
    assert rlx.jit(lambda t: rlx.random.categorical(0, t))(logits) == eager
    assert rlx.jit(lambda k, t: rlx.random.categorical(k, t))(np.int32(0), logits) == eager
    draw = rlx.jit(lambda k: rlx.random.uniform(k, (2,)))
    for key in (5, -7, 2**33, -(2**40) - 3):
        np.testing.assert_array_equal(draw(np.int64(key)), rlx.random.uniform(key, 2))
    np.testing.assert_array_equal(rlx.random.uniform(5, 2), draw(np.int32(5)))
    assert not np.array_equal(rlx.random.uniform(2**33, 2), rlx.random.uniform(0, 2))
    for call, message in [
            (lambda: rlx.random.uniform(0, (3,), minval=np.zeros(4, np.float32)),
             "uniform: minval of shape [4] does not broadcast to the sample shape [3]"),
            (lambda: rlx.random.categorical(0, np.complex64([1, 2])),
             "categorical takes real logits; got complex64"),
            (lambda: rlx.random.categorical(0, logits, axis=3),
             "categorical: axis 3 is out of range for logits of shape [2]"),
            (lambda: rlx.random.uniform(2**70, 2), "the random key 1180591620717411303424 "
             "does not fit 64 bits")]:
        with pytest.raises(RlxError, match=re.escape(message)):
            call()

    @rlx.custom_vjp
    def noisy(x, key):
        return x + rlx.random.normal(key, x.shape)

    noisy.defvjp(lambda x, key: (noisy(x, key), x), lambda r, g: (g, None))
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(rlx.grad(lambda x: noisy(x, 3).sum())(x), [1, 1, 1])


def test_a_chain_of_64_bit_keys_does_not_revisit_a_key():
    """``key, sub = split(key)`` from ``rlx.random.key``: i64 keys of 53 random bits (31-bit
    keys repeated after 15-75k steps, and the dropout masks with them)."""
    key, seen = rlx.random.key(0), set()
    for _ in range(100_000):
        key, sub = rlx.random.split(key)
        assert key.dtype == sub.dtype == np.int64
        seen.update((int(key), int(sub)))
    assert len(seen) == 200_000
    assert max(abs(k) for k in seen) > 2**52  # all 53 bits in use


@pytest.mark.parametrize("key", [rlx.random.key(7), np.int32(-2**31), 123, np.int64(2**40 + 3),
                                 np.int64(-2**63)])
def test_split_and_draws_agree_eagerly_and_under_jit(key):
    @rlx.jit
    def draws(k):
        a, b = rlx.random.split(k, 2)
        return a, b, rlx.random.uniform(b, (5,)), rlx.random.normal(a, (3,))

    a, b, u, n = draws(key)
    ea, eb = rlx.random.split(key, 2)
    assert a.dtype == ea.dtype == (np.int32 if isinstance(key, (int, np.int32)) else np.int64)
    assert (int(a), int(b)) == (int(ea), int(eb))
    np.testing.assert_array_equal(u, rlx.random.uniform(eb, (5,)))
    np.testing.assert_allclose(n, rlx.random.normal(ea, (3,)), atol=1e-6)


def test_keys_draw_by_value_and_both_halves_count():
    """An i32 key and the i64 of its value draw the same numbers; keys differing only in
    their high 32 bits draw different ones (they shared a stream when folded to 32 bits)."""
    np.testing.assert_array_equal(rlx.random.uniform(np.int32(-3), 8),
                                  rlx.random.uniform(np.int64(-3), 8))
    lows = [rlx.random.uniform(np.int64(5 + (h << 32)), 8) for h in range(4)]
    assert len({u.tobytes() for u in lows}) == 4
    traced = rlx.jit(lambda k: rlx.random.uniform(k, 8))
    for h in range(4):
        np.testing.assert_array_equal(traced(np.int64(5 + (h << 32))), lows[h])


def test_an_i64_key_is_carried_by_scan_next_to_floats():
    def body(carry, x):
        key, total = carry
        key, sub = rlx.random.split(key)
        return (key, total + rlx.random.uniform(sub, ()) + x), sub

    xs = np.arange(4, dtype=np.float32)
    (key, total), subs = rlx.jit(lambda xs, k: rlx.scan(body, (k, np.float32(0)), xs))(
        xs, rlx.random.key(9))
    k, want, want_subs = rlx.random.key(9), np.float32(0), []
    for x in xs:
        k, s = rlx.random.split(k)
        want, want_subs = want + rlx.random.uniform(s, ()) + x, [*want_subs, int(s)]
    assert int(key) == int(k) and list(subs) == want_subs
    np.testing.assert_allclose(total, want, rtol=1e-6)


@pytest.mark.parametrize("call,message", [
    (lambda: rlx.random.uniform(0, (2**16, 2**15)), "a random sample of 2147483648 elements"),
    (lambda: rlx.jit(lambda k: rlx.random.normal(k, (2**31,)))(np.int32(1)),
     "a random sample of 2147483648 elements per key: at most 2^31 - 1"),
    (lambda: rlx.random.bernoulli(0, 1.5), "bernoulli: p must lie in [0, 1], got 1.5"),
    (lambda: rlx.random.bernoulli(0, np.array([0.5, np.nan])), "p must lie in [0, 1]"),
    (lambda: rlx.random.uniform(0, 2, minval=3, maxval=1), "uniform: minval 3 is above maxval 1"),
    (lambda: rlx.random.uniform(0, 2, maxval=np.inf), "uniform: the bounds must be finite"),
    (lambda: rlx.jit(lambda x, k, t: rlx.nn.dropout(x, 0.5, k, t))(np.ones(2, np.float32), 0,
                                                                   True),
     "static_argnames=('training',)"),
])
def test_third_review_misuse_is_a_located_error(call, message):
    with pytest.raises(RlxError, match=re.escape(message)) as info:
        call()
    assert "test_random.py" in str(info.value)


def test_uniform_keeps_its_dtype_with_traced_f64_bounds_and_bernoulli_takes_p_shape():
    traced = rlx.jit(lambda k, a: rlx.random.uniform(k, (3,), "f32", minval=a, maxval=a + 1))
    out = traced(np.int32(0), np.float64(2.0))
    assert out.dtype == np.float32 and np.all((out >= 2) & (out < 3))
    np.testing.assert_array_equal(out, rlx.random.uniform(0, (3,), "f32", 2.0, 3.0))
    p = np.array([[0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
    np.testing.assert_array_equal(rlx.random.bernoulli(3, p), p.astype(bool))
