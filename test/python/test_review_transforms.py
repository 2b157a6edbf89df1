"""Fresh-eyes review probes of the derivative and batching transforms (grad, jvp, vmap,
hessian and their compositions), as a JAX user would write them, against JAX in float64.

Every probe runs twice: natively (``rlx.jit``) and in the reference interpreter (the
same traced module through ``rlx.interpret``). The bugs the review found (a bounded
while_loop unrolled under vmap, a complex loss accepted by grad) have regression tests
here; the other probes guard behaviour that already matched JAX.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest
from jax import lax

import rlx_mlir as rlx
from rlx_mlir import RlxError
from rlx_mlir.frontend.tracing import flatten, unflatten

jnp = jax.numpy


class JNN:
    """``rlx.nn``'s names on JAX."""

    abs = staticmethod(jnp.abs)
    relu = staticmethod(jax.nn.relu)
    logsumexp = staticmethod(jax.nn.logsumexp)

pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)

RNG = np.random.default_rng(1234)


def native_and_interpreted(fn, *args) -> list[Any]:
    """``fn(*args)`` compiled natively, and the same traced module interpreted."""
    jitted = rlx.jit(fn)
    native = jitted(*args)
    traced = jitted.lower(*args)
    leaves = [leaf for _, leaf in flatten(list(args))[0]]
    outs = rlx.interpret(traced.module, *leaves, entry=traced.name)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    return [native, unflatten(traced.out_tree, outs)]


def check(fn, want, *args, rtol=1e-9, atol=1e-11) -> None:
    """Both paths of ``fn(*args)`` equal ``want`` (a pytree), shapes included."""
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    for got in native_and_interpreted(fn, *args):
        got_leaves, got_tree = jax.tree_util.tree_flatten(got)
        assert got_tree == want_tree
        for g, w in zip(got_leaves, want_leaves, strict=True):
            assert np.shape(g) == np.shape(w)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def j(*arrays):
    """numpy -> jax arrays (JAX traces index with them; numpy arrays cannot be)."""
    return [jnp.asarray(a) for a in arrays]


# ================================================================ bugs


def test_third_derivatives_of_abs_relu_and_logsumexp():
    """Order 3 through the activations test_third_order.py leaves out (abs and relu are
    piecewise linear, logsumexp composes exp and log), both paths."""
    x = np.array([0.3, -0.7, 1.2, -2.0])

    def f(nn):
        return lambda x: (nn.abs(x) * x * x + nn.relu(x) ** 3).sum() + nn.logsumexp(x * x)

    def third(grad, g):
        return grad(lambda x: grad(lambda x: grad(g)(x).sum())(x).sum())

    check(lambda x: third(rlx.grad, f(rlx.nn))(x), third(jax.grad, f(JNN))(x), x)


@pytest.mark.parametrize("bound", [400, 60])
def test_vmap_of_a_bounded_while_loop_stays_a_loop(bound):
    """vmap keeps a bounded while_loop one rlx.while (unrolled with a mask per element it
    took 159 s to compile at 400 iterations); each element stops at its own exit or at the
    bound, whichever comes first."""
    def f(x):
        return rlx.while_loop(lambda s: s.sum() < 5.0, lambda s: s * 1.01 + 0.001, x,
                              max_iterations=bound)

    x = np.stack([np.full(3, 0.1), np.full(3, 1.0), np.full(3, 1.6), np.full(3, 0.5)])
    unbatched = rlx.jit(f).lower(x[0]).as_text()
    batched = rlx.jit(rlx.vmap(f)).lower(x).as_text()
    assert unbatched.count("rlx.while") == 1
    assert batched.count("rlx.while") == 1
    assert batched.count("\n") < 10 * unbatched.count("\n")
    want = []
    for row in x:
        for _ in range(bound):
            if row.sum() >= 5.0:
                break
            row = row * 1.01 + 0.001
        want.append(row)
    np.testing.assert_allclose(rlx.vmap(f)(x), np.array(want), rtol=1e-12)


def test_grad_of_a_complex_valued_function_is_an_error():
    """As jax.grad: a complex loss is a clear error (not a holomorphic derivative, and not
    a verifier failure deep in the backward ops)."""
    z = np.complex64(1 + 2j)
    for f in (lambda z: z * z, lambda z: rlx.nn.exp(z)):
        with pytest.raises(RlxError, match="must be a float tensor .f32, f64, f16 or bf16"):
            rlx.grad(f).lower(z)


# ================================================================ passing probes
# ---------------------------------------------------------------- higher order, no activation


THIRD_ORDER_OPS = {
    "log_softmax": (lambda x, w: (rlx.nn.log_softmax(x, axis=0) * w).sum(),
                    lambda x, w: (jax.nn.log_softmax(x, axis=0) * w).sum()),
    "layer_norm": (lambda x, w: (rlx.nn.layer_norm(x, np.ones(4), np.zeros(4)) * w).sum(),
                   lambda x, w: ((x - x.mean(-1, keepdims=True))
                                 / jnp.sqrt(x.var(-1, keepdims=True) + 1e-5) * w).sum()),
    "solve": (lambda x, w: (x.builder.dense_solve(x[:, :3] + 3.0 * np.eye(3), x[:, 3]) ** 2).sum(),
              lambda x, w: (jnp.linalg.solve(x[:, :3] + 3.0 * jnp.eye(3), x[:, 3]) ** 2).sum()),
    "max_min_where": (lambda x, w: (rlx.nn.where(x > 0, rlx.nn.maximum(x, w) ** 3,
                                                 rlx.nn.minimum(x, w) ** 4)).sum(),
                      lambda x, w: jnp.where(x > 0, jnp.maximum(x, w) ** 3,
                                             jnp.minimum(x, w) ** 4).sum()),
}


@pytest.mark.parametrize("name", sorted(THIRD_ORDER_OPS))
def test_third_order_through_non_activation_ops(name):
    """jvp(jvp(grad)) through softmax-like ops, the norms, solves and piecewise ops."""
    ours, theirs = THIRD_ORDER_OPS[name]
    x, u, v, w = (RNG.standard_normal((3, 4)) for _ in range(4))
    want = jax.jvp(lambda x: jax.jvp(jax.grad(lambda x: theirs(x, w)), (x,), (u,))[1],
                   (x,), (v,))[1]
    check(lambda x: rlx.jvp(lambda x: rlx.jvp(rlx.grad(lambda x: ours(x, w)), (x,), (u,))[1],
                            (x,), (v,))[1], want, x)


def test_jacfwd_and_jacrev_agree_at_kinks():
    """abs(0), relu(0), maximum ties with the first operand, clip at its bounds: forward
    and reverse mode use the same one-sided conventions (docs/comparison.md)."""
    x = np.array([0.0, 1.0, -1.0, 2.5, 1.0])

    def f(x):
        return (rlx.nn.abs(x) + rlx.nn.relu(x) * 2.0 + rlx.nn.maximum(x, 1.0) * 3.0
                + rlx.nn.minimum(rlx.nn.maximum(x, -1.0), 1.0) * 5.0)

    fwd, rev = rlx.jacfwd(f)(x), rlx.jacrev(f)(x)
    np.testing.assert_array_equal(fwd, rev)


def test_pow_second_derivatives_at_zero_and_negative_bases():
    """x**n (Python int and float exponents) and a**b (tensor exponent) at 0 and < 0."""
    x = np.array([-2.0, -0.5, 0.0, 1.5])
    b = np.array([2.0, 3.0, 2.0, 0.0])

    def ours(x):
        return rlx.hessian(lambda x: (x ** 3).sum() + (x ** 2.0).sum() + (x ** b).sum())(x)

    want = jax.hessian(lambda x: (x ** 3).sum() + (x ** 2.0).sum() + (x ** b).sum())(x)
    check(ours, want, x)


# ---------------------------------------------------------------- control flow


W = RNG.standard_normal((3, 3)) * 0.5
H0 = RNG.standard_normal(3)
XS = RNG.standard_normal((5, 3))


def rnn_loss(lib, c, **kw):
    def loss(w, h0, xs):
        h, _ = c.scan(lambda h, x: (lib.tanh(h @ w + x), None), h0, xs, **kw)
        return (h * h).sum()
    return loss


def test_vmap_of_grad_of_a_checkpointed_scan_with_batched_weight_and_xs():
    """SPEC 9.16 (vmap of a checkpointed scan_backward) with the weight batched and xs
    batched on axis 1."""
    ours = rlx.vmap(rlx.grad(rnn_loss(rlx.nn, rlx, num_checkpoints=2), argnums=(0, 2)),
                    in_axes=(0, None, 1))
    theirs = jax.vmap(jax.grad(rnn_loss(jnp, lax), argnums=(0, 2)), in_axes=(0, None, 1))
    ws, xs = np.stack([W, -W]), np.stack([XS, 0.5 * XS], 1)
    check(lambda w, x: ours(w, H0, x), theirs(ws, H0, xs), ws, xs)


def test_grad_of_grad_through_a_checkpointed_scan():
    ours = rnn_loss(rlx.nn, rlx, num_checkpoints=2)
    theirs = rnn_loss(jnp, lax)
    want = jax.grad(lambda w: (jax.grad(theirs)(w, H0, XS) ** 2).sum())(W)
    check(lambda w: rlx.grad(lambda w: (rlx.grad(ours)(w, H0, XS) ** 2).sum())(w), want, W)


def test_hvp_of_a_reverse_scan_with_an_int_counter_and_pytree_ys():
    def make(lib, c):
        def f(w):
            def step(carry, x):
                h, n = carry
                h2 = lib.tanh(h @ w + x * n.astype(h.dtype))
                return (h2, n + 1), (h2 * 2.0, h2.sum())
            (h, n), (ys, ss) = c.scan(step, (H0, 1), XS, reverse=True)
            return (h * h).sum() + (ys ** 2).sum() + (ss * ss).sum() * n.astype(h.dtype)
        return f

    want = jax.jvp(jax.grad(make(jnp, lax)), (W,), (W.T,))[1]
    check(lambda w: rlx.jvp(rlx.grad(make(rlx.nn, rlx)), (w,), (W.T,))[1], want, W)


def test_fori_loop_indexing_with_the_traced_counter_grad_and_vmap():
    """``x[i]`` with the loop index i a traced i32 (a gather inside the scan body)."""
    def make(lib, c, zeros):
        return lambda x, w: c.fori_loop(
            0, 4, lambda i, acc: acc * lib.tanh(x[i] * w) + x[i], zeros).sum()

    x, w = RNG.standard_normal((2, 4, 3)), np.array([0.5, -1.0, 2.0])
    ours = rlx.vmap(rlx.grad(make(rlx.nn, rlx, np.zeros(3)), argnums=(0, 1)), in_axes=(0, None))
    theirs = jax.vmap(jax.grad(make(jnp, lax, jnp.zeros(3)), argnums=(0, 1)),
                      in_axes=(0, None))
    check(ours, theirs(*j(x, w)), x, w)


def test_vmap_of_fori_loop_with_a_batched_traced_upper_bound():
    def make(c):
        return lambda n, x: c.fori_loop(0, n, lambda i, h: h * 1.1 + i, x)
    n, x = np.array([2, 5], np.int32), RNG.standard_normal((2, 3))
    check(rlx.vmap(make(rlx)), jax.vmap(make(lax))(n, x), n, x)


def test_vmap_of_grad_of_a_bounded_while_with_a_batched_threshold():
    def ours(a, x):
        return rlx.while_loop(lambda s: s.sum() < a, lambda s: s * 1.5 + rlx.nn.sin(s), x,
                              max_iterations=40).sum()

    def theirs(a, x):
        body = lambda i, s: jnp.where(s.sum() < a, s * 1.5 + jnp.sin(s), s)  # noqa: E731
        return lax.fori_loop(0, 40, body, x).sum()

    a, x = np.array([5.0, 50.0]), np.abs(RNG.standard_normal((2, 3))) + 0.1
    check(rlx.vmap(rlx.grad(ours, argnums=1)), jax.vmap(jax.grad(theirs, argnums=1))(a, x),
          a, x)


def test_hessian_of_cond_and_vmap_of_grad_of_cond_with_a_batched_predicate():
    def make(lib, c):
        return lambda x: c.cond(x.sum() > 0, lambda a: (a ** 3).sum(),
                                lambda a: lib.sin(a).prod(), x)
    x = RNG.standard_normal((2, 3))
    check(rlx.hessian(make(rlx.nn, rlx)), jax.hessian(make(jnp, lax))(x[0]), x[0])
    check(rlx.vmap(rlx.grad(make(rlx.nn, rlx))), jax.vmap(jax.grad(make(jnp, lax)))(x), x)


# ---------------------------------------------------------------- custom_fn (custom_vjp)


def scaled_mul(x, w):
    """``x * w`` with a vjp that doubles x's gradient (w broadcast over x's rows)."""
    return x.builder.custom_fn([x, w], lambda b, a, v: a * v,
                               vjp=lambda b, a, v, y, g: (g * v * 2.0, (g * a).sum(axis=0)))


@jax.custom_vjp
def scaled_mul_jax(x, w):
    return x * w


scaled_mul_jax.defvjp(lambda x, w: (x * w, (x, w)),
                      lambda r, g: (g * r[1] * 2.0, (g * r[0]).sum(0)))


def test_grad_of_vmap_and_vmap_of_grad_of_a_custom_vjp_with_a_shared_operand():
    x, w = RNG.standard_normal((2, 3, 4)), RNG.standard_normal(4)
    loss_r = lambda x, w: (rlx.vmap(scaled_mul, in_axes=(0, None))(x, w) ** 2).sum()  # noqa: E731
    loss_j = lambda x, w: (jax.vmap(scaled_mul_jax, in_axes=(0, None))(x, w) ** 2).sum()  # noqa: E731
    check(rlx.grad(loss_r, argnums=(0, 1)), jax.grad(loss_j, argnums=(0, 1))(x, w), x, w)
    per = lambda f: lambda x, w: (f(x, w) ** 2).sum()  # noqa: E731
    check(rlx.vmap(rlx.grad(per(scaled_mul), argnums=(0, 1)), in_axes=(0, None)),
          jax.vmap(jax.grad(per(scaled_mul_jax), argnums=(0, 1)), in_axes=(0, None))(x, w),
          x, w)


# ---------------------------------------------------------------- vmap of ops


def test_vmap_of_grad_of_cross_entropy_with_per_example_ignored_rows():
    """"mean" divides by each example's own count of rows that are not ignored."""
    def ce(z, y):
        valid = y != -100
        picked = jnp.take_along_axis(z, jnp.where(valid, y, 0)[:, None], 1)[:, 0]
        per = jnp.where(valid, jax.nn.logsumexp(z, -1) - picked, 0.0)
        return per.sum() / valid.sum()

    logits = RNG.standard_normal((2, 4, 3))
    labels = np.array([[0, -100, 2, 1], [-100, -100, 1, 2]], np.int32)
    ours = rlx.vmap(rlx.grad(lambda z, y: rlx.nn.cross_entropy(z, y) ** 2))
    check(ours, jax.vmap(jax.grad(lambda z, y: ce(z, y) ** 2))(*j(logits, labels)),
          logits, labels)


def attention_jax(q, k, v, heads, kv_heads, window):
    """[B, S, H*D] attention, GQA, sliding window aligned to the end of the keys."""
    b, s, e = q.shape
    d, skv = e // heads, k.shape[1]
    qh = q.reshape(b, s, heads, d).transpose(0, 2, 1, 3)
    kh, vh = (jnp.repeat(t.reshape(b, skv, kv_heads, d).transpose(0, 2, 1, 3),
                         heads // kv_heads, axis=1) for t in (k, v))
    scores = qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(d)
    pos, key = (skv - s) + jnp.arange(s)[:, None], jnp.arange(skv)[None, :]
    scores = jnp.where((key <= pos) & (key >= pos - window), scores, -jnp.inf)
    out = jax.nn.softmax(scores, axis=-1) @ vh
    return out.transpose(0, 2, 1, 3).reshape(b, s, e)


def test_vmap_of_grad_of_gqa_sliding_window_attention_with_a_shared_key():
    q, k, v = (RNG.standard_normal(s) for s in ((2, 2, 3, 8), (2, 5, 4), (2, 2, 5, 4)))

    def ours(q, k, v):
        o = rlx.nn.attention(q, k, v, 4, num_kv_heads=2, mask_kind="sliding_window", window=1)
        return (o ** 2).sum()

    def theirs(q, k, v):
        return (attention_jax(q, k, v, 4, 2, 1) ** 2).sum()

    check(rlx.vmap(rlx.grad(ours, argnums=(0, 1, 2)), in_axes=(0, None, 0)),
          jax.vmap(jax.grad(theirs, argnums=(0, 1, 2)), in_axes=(0, None, 0))(q, k, v),
          q, k, v)


def test_grad_with_respect_to_an_attention_bias():
    """SPEC 9.4: the additive mask gets its gradient."""
    q, k, v = (RNG.standard_normal((1, 3, 4)) for _ in range(3))
    bias = RNG.standard_normal((1, 2, 3, 3))

    def theirs(bias):
        qh, kh, vh = (t.reshape(1, 3, 2, 2).transpose(0, 2, 1, 3) for t in (q, k, v))
        p = jax.nn.softmax(qh @ kh.transpose(0, 1, 3, 2) / np.sqrt(2.0) + bias, -1)
        return ((p @ vh).transpose(0, 2, 1, 3).reshape(1, 3, 4) ** 3).sum()

    ours = rlx.grad(lambda m: (rlx.nn.attention(q, k, v, 2, mask=m, mask_kind="bias") ** 3).sum())
    check(ours, jax.grad(theirs)(bias), bias, rtol=1e-6, atol=1e-9)  # score_scale is f32


@pytest.mark.parametrize(("lhs_rank", "rhs_rank", "in_axes"),
                         [(1, 3, (0, None)), (3, 1, (None, -1)), (2, 3, (1, 0)),
                          (3, 2, (-1, None)), (1, 1, (0, 0))])
def test_grad_of_vmap_of_matmul_rank_combinations(lhs_rank, rhs_rank, in_axes):
    lhs = {1: (3,), 2: (2, 3), 3: (4, 2, 3)}[lhs_rank]
    rhs = {1: (3,), 2: (3, 2), 3: (4, 3, 2)}[rhs_rank]

    def batched(shape, axis):
        if axis is None:
            return RNG.standard_normal(shape)
        shape = list(shape)
        shape.insert(axis % (len(shape) + 1), 5)
        return RNG.standard_normal(shape)

    a, b = batched(lhs, in_axes[0]), batched(rhs, in_axes[1])
    loss_r = lambda a, b: rlx.vmap(lambda a, b: rlx.nn.sin(a @ b), in_axes=in_axes)(a, b).sum()  # noqa: E731
    loss_j = lambda a, b: jax.vmap(lambda a, b: jnp.sin(a @ b), in_axes=in_axes)(a, b).sum()  # noqa: E731
    check(rlx.grad(loss_r, argnums=(0, 1)), jax.grad(loss_j, argnums=(0, 1))(a, b), a, b)


def test_vmap_of_grad_of_a_grouped_strided_conv_with_batched_weights():
    def conv_j(x, w):
        return lax.conv_general_dilated(x, w, (2, 1), [(1, 1), (0, 0)], rhs_dilation=(1, 2),
                                        feature_group_count=2)

    def loss_r(w, x):
        return (rlx.nn.conv2d(x, w, stride=(2, 1), padding=(1, 0), dilation=(1, 2),
                              groups=2) ** 2).sum()

    x, w = RNG.standard_normal((3, 2, 6, 7, 9)), RNG.standard_normal((3, 4, 3, 2, 3))
    want = jax.vmap(jax.grad(lambda w, x: (conv_j(x, w) ** 2).sum(), argnums=(0, 1)))(w, x)
    check(rlx.vmap(rlx.grad(loss_r, argnums=(0, 1))), want, w, x)


def test_rope_tables_jvp_and_vmap_of_batched_tables():
    """rope's cos/sin get no gradient and no tangent (frozen, SPEC Appendix A: forward and
    reverse mode agree); vmap batches them."""
    x = RNG.standard_normal((2, 3, 8))
    cos, sin = RNG.standard_normal((2, 3, 2)), RNG.standard_normal((2, 3, 2))

    def rope_j(x, c, s):
        h = x.reshape(2, 3, 2, 4)
        f, g = h[..., :2], h[..., 2:]
        c, s = c[:, None, :], s[:, None, :]
        return jnp.concatenate([f * c - g * s, g * c + f * s], -1).reshape(x.shape)

    ours = lambda c, s: rlx.nn.rope(x, c, s, 4)  # noqa: E731
    check(rlx.vmap(ours), jax.vmap(lambda c, s: rope_j(x, c, s))(cos, sin), cos, sin)
    value, tangent = rlx.jvp(ours, (cos[0], sin[0]), (sin[0], cos[0]))
    np.testing.assert_allclose(value, rope_j(x, cos[0], sin[0]), rtol=1e-12)
    np.testing.assert_array_equal(tangent, np.zeros_like(x))
    grads = rlx.grad(lambda c, s: (ours(c, s) ** 2).sum(), argnums=(0, 1))(cos[0], sin[0])
    assert all(not np.any(g) for g in grads)


def test_vmap_of_grad_of_group_norm_with_batched_gamma():
    x, beta = RNG.standard_normal((2, 4, 3)), RNG.standard_normal(4)

    def gn_j(g):
        xr = x.reshape(2, 2, -1)
        y = ((xr - xr.mean(-1, keepdims=True)) / jnp.sqrt(xr.var(-1, keepdims=True) + 1e-5))
        return y.reshape(x.shape) * g[None, :, None] + beta[None, :, None]

    ours = rlx.grad(lambda g: (g.builder.group_norm(x, g, beta, num_groups=2) ** 3).sum())
    gammas = RNG.standard_normal((2, 4))
    check(rlx.vmap(ours), jax.vmap(jax.grad(lambda g: (gn_j(g) ** 3).sum()))(gammas), gammas,
          rtol=1e-6, atol=1e-9)  # eps is stored as f32


def test_hvp_and_vmap_of_dense_solve():
    a = RNG.standard_normal((3, 3)) + 3.0 * np.eye(3)
    b = RNG.standard_normal((3, 2, 4))
    check(rlx.vmap(lambda b: b.builder.dense_solve(a, b), in_axes=2),
          jax.vmap(lambda b: jnp.linalg.solve(a, b), in_axes=2)(b), b)
    vec = b[:, 0, 0]
    want = jax.jvp(jax.grad(lambda a: (jnp.linalg.solve(a, vec) ** 3).sum()), (a,), (a.T,))[1]
    ours = rlx.grad(lambda a: (a.builder.dense_solve(a, vec) ** 3).sum())
    check(lambda a: rlx.jvp(ours, (a,), (a.T,))[1], want, a)


def test_exclusive_cumsum_hessian_and_vmap_of_grad():
    def cum_r(x, axis):
        return x.builder.cumsum(x, axis=axis, exclusive=True)

    def cum_j(x, axis):
        return jnp.cumsum(x, axis=axis) - x

    x = RNG.standard_normal((3, 4))
    check(rlx.hessian(lambda x: (cum_r(x, 0) ** 3).sum()),
          jax.hessian(lambda x: (cum_j(x, 0) ** 3).sum())(x), x)
    xb = RNG.standard_normal((3, 2, 4))
    check(rlx.vmap(rlx.grad(lambda x: rlx.nn.sin(cum_r(x, -1)).sum()), in_axes=1),
          jax.vmap(jax.grad(lambda x: jnp.sin(cum_j(x, -1)).sum()), in_axes=1)(xb), xb)


# ---------------------------------------------------------------- broadcasting, indexing


@pytest.mark.parametrize("op", ["max", "min", "where", "pow", "mod"])
def test_gradients_of_broadcast_operands_are_summed_back(op):
    ops = {
        "max": (lambda x, y: rlx.nn.maximum(x, y), jnp.maximum),
        "min": (lambda x, y: rlx.nn.minimum(x, y), jnp.minimum),
        "where": (lambda x, y: rlx.nn.where(x > y, x * y, x - y),
                  lambda x, y: jnp.where(x > y, x * y, x - y)),
        "pow": (lambda x, y: (x * x + 0.5) ** y, lambda x, y: (x * x + 0.5) ** y),
        "mod": (lambda x, y: x % (y * y + 1.0), lambda x, y: x % (y * y + 1.0)),
    }
    ours, theirs = ops[op]
    for x, y in [(RNG.standard_normal((2, 1)), RNG.standard_normal((1, 3))),
                 (RNG.standard_normal((3, 1)), RNG.standard_normal((2, 1, 4)))]:
        want = jax.grad(lambda x, y: jnp.sin(theirs(x, y)).sum(), argnums=(0, 1))(x, y)
        check(rlx.grad(lambda x, y: rlx.nn.sin(ours(x, y)).sum(), argnums=(0, 1)), want, x, y)


def test_mod_gradient_at_exact_multiples_is_jax_s():
    """Where ``a % b`` is exactly 0 (a = 0 included) its value is numpy's signed zero and
    its gradient JAX's (1 for ``a``, ``-a / b`` for ``b``), not 0; forward mode too."""
    a = np.array([0.0, 1.5, -0.75, 3.0, 0.5, -1.5])
    b = np.array([0.75, 0.75, 0.75, -0.75, -0.75, -0.75])
    want = jax.grad(lambda a, b: (a % b).sum(), argnums=(0, 1))(a, b)
    check(rlx.grad(lambda a, b: (a % b).sum(), argnums=(0, 1)), want, a, b)
    value, tangent = rlx.jvp(lambda a: a % 0.75, (a,), (np.ones_like(a),))
    np.testing.assert_array_equal(tangent, np.ones_like(a))
    np.testing.assert_array_equal(np.signbit(value), np.signbit(np.mod(a, 0.75)))


def test_embedding_gradient_follows_the_clamped_forward():
    """Negative ids count from the end and out-of-range ids are clamped (docs/api.md); the
    gradient goes to the row the forward read (central differences; JAX drops it)."""
    table = RNG.standard_normal((4, 3))
    ids = np.array([-1, 0, 5, -6, 2], np.int32)
    weights = RNG.standard_normal((5, 3))
    loss = lambda t: (rlx.nn.embedding(t, ids) * weights).sum()  # noqa: E731
    eps, want = 1e-6, np.zeros_like(table)
    f = rlx.jit(loss)
    for i in np.ndindex(table.shape):
        d = np.zeros_like(table)
        d[i] = eps
        want[i] = (f(table + d) - f(table - d)) / (2 * eps)
    check(rlx.grad(loss), want, table, rtol=1e-6, atol=1e-8)
