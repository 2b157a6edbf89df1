"""numpy/JAX helpers of the traced API (``rlx.nn.stack`` ... ``rlx.linalg.solve``, Tensor
``var``/``any``/``squeeze`` ...) against numpy, torch and JAX."""

import jax
import numpy as np
import pytest
import torch

import rlx_mlir as rlx

RNG = np.random.default_rng(11)
X = RNG.standard_normal((3, 4, 5)).astype(np.float32)
XI = RNG.integers(-5, 5, (3, 4)).astype(np.int32)


def close(got, want, tol=1e-5):
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=tol, atol=tol)


CASES = {
    "stack": (lambda a: rlx.nn.stack([a, a * 2], axis=1), lambda a: np.stack([a, a * 2], 1)),
    "stack last": (lambda a: rlx.nn.stack([a, a], axis=-1), lambda a: np.stack([a, a], -1)),
    "flip": (lambda a: rlx.nn.flip(a, 1), lambda a: np.flip(a, 1)),
    "flip all": (rlx.nn.flip, np.flip),
    "pad": (lambda a: rlx.nn.pad(a, ((0, 1), (2, 0), (1, 1)), 3.0),
            lambda a: np.pad(a, ((0, 1), (2, 0), (1, 1)), constant_values=3.0)),
    "pad int": (lambda a: rlx.nn.pad(a, 1), lambda a: np.pad(a, 1)),
    "cumsum": (lambda a: rlx.nn.cumsum(a, 1), lambda a: np.cumsum(a, 1)),
    "cumsum flat": (rlx.nn.cumsum, np.cumsum),
    "tan": (lambda a: rlx.nn.tan(a * 0.5), lambda a: np.tan(a * 0.5)),
    "arctan": (rlx.nn.arctan, np.arctan),
    "rsqrt": (lambda a: rlx.nn.rsqrt(abs(a) + 0.1), lambda a: 1 / np.sqrt(np.abs(a) + 0.1)),
    "log1p": (lambda a: rlx.nn.log1p(abs(a) - 0.5), lambda a: np.log1p(np.abs(a) - 0.5)),
    "floor": (rlx.nn.floor, np.floor),
    "ceil": (rlx.nn.ceil, np.ceil),
    "sign": (rlx.nn.sign, np.sign),
    "clip": (lambda a: rlx.nn.clip(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5)),
    "clip method": (lambda a: a.clip(max=0.2), lambda a: np.clip(a, None, 0.2)),
    "var": (lambda a: a.var(1), lambda a: a.var(1)),
    "var ddof": (lambda a: a.var((0, 2), keepdims=True, ddof=1),
                 lambda a: a.var((0, 2), keepdims=True, ddof=1)),
    "std": (lambda a: a.std(), lambda a: a.std()),
    "any": (lambda a: (a > 1).any(1), lambda a: (a > 1).any(1)),
    "all": (lambda a: (a > -2).all(), lambda a: (a > -2).all()),
    "any of floats": (lambda a: (a * (a > 1)).any(0), lambda a: (a * (a > 1)).any(0)),
    "squeeze": (lambda a: a.reshape(3, 1, 4, 5, 1).squeeze(), lambda a: a),
    "squeeze axis": (lambda a: a.reshape(3, 1, 20).squeeze(1), lambda a: a.reshape(3, 20)),
    "ravel": (lambda a: a.ravel(), lambda a: a.ravel()),
    "flatten": (lambda a: a.flatten(), lambda a: a.flatten()),
    "swapaxes": (lambda a: a.swapaxes(0, -1), lambda a: a.swapaxes(0, -1)),
    "unary plus": (lambda a: +a, lambda a: a),
}


@pytest.mark.parametrize("name", CASES)
def test_helpers_match_numpy(name):
    ours, numpy_fn = CASES[name]
    want = numpy_fn(X)
    got = rlx.jit(ours)(X)
    assert np.asarray(got).dtype == np.asarray(want).dtype or name in ("var", "std")
    close(got, want)


def test_integer_cumsum_and_eager_stack():
    np.testing.assert_array_equal(rlx.jit(lambda a: rlx.nn.cumsum(a, 0))(XI), np.cumsum(XI, 0))
    np.testing.assert_array_equal(rlx.nn.stack([XI, XI]), np.stack([XI, XI]))


def test_log1p_keeps_tiny_arguments_and_its_gradient():
    tiny = np.array([1e-10, -1e-10, 1e-30], np.float32)
    close(rlx.jit(rlx.nn.log1p)(tiny), np.log1p(tiny.astype(np.float64)), 1e-6)
    close(rlx.grad(lambda v: rlx.nn.log1p(v).sum())(X * 0.5), 1 / (1 + X * 0.5))


def test_floor_ceil_sign_have_zero_gradients_var_jax_s():
    for fn in (rlx.nn.floor, rlx.nn.ceil, rlx.nn.sign):
        close(rlx.grad(lambda v, fn=fn: fn(v).sum())(X), np.zeros_like(X))
    close(rlx.grad(lambda a: a.var(0).sum())(X), jax.grad(lambda a: a.var(0).sum())(X))


@pytest.mark.parametrize("groups,affine", [(2, True), (4, False)])
def test_group_norm_matches_torch(groups, affine):
    gamma, beta = (RNG.standard_normal(4).astype(np.float32) for _ in range(2))
    args = (gamma, beta) if affine else ()
    want = torch.nn.functional.group_norm(torch.tensor(X), groups,
                                          *(torch.tensor(a) for a in args)).numpy()
    close(rlx.jit(lambda a: rlx.nn.group_norm(a, groups, *args))(X), want, 1e-4)


def test_linalg_solve_single_batched_and_its_gradient():
    a = RNG.standard_normal((4, 4)) + 4 * np.eye(4)
    b = RNG.standard_normal((4, 2))
    close(rlx.jit(rlx.linalg.solve)(a, b), np.linalg.solve(a, b), 1e-10)
    a3, b3 = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4), RNG.standard_normal((2, 4, 1))
    close(rlx.jit(rlx.linalg.solve)(a3, b3), np.linalg.solve(a3, b3), 1e-10)  # numpy 2's rule
    x = np.linalg.solve(a, b)
    db = np.linalg.solve(a.T, 2 * x)  # d|x|^2/db = A^-T 2x, d/dA = -(A^-T 2x) x^T
    want = (-db @ x.T, db)
    got = rlx.grad(lambda a, b: (rlx.linalg.solve(a, b) ** 2).sum(), argnums=(0, 1))(a, b)
    for g, w in zip(got, want, strict=True):
        close(g, w, 1e-8)


@pytest.mark.parametrize("call,message", [
    (lambda: rlx.jit(lambda a: a.squeeze(0))(X), "squeeze: axis 0 has size 3, not 1"),
    (lambda: rlx.jit(lambda a: rlx.nn.stack([a, a], axis=4))(X), "stack: axis 4 is out of range"),
    (lambda: rlx.jit(lambda a: rlx.nn.pad(a, -1))(X), "pad: widths must be >= 0"),
    (lambda: rlx.jit(lambda a: rlx.nn.pad(a, ((1, 2, 3),)))(X), "pad: pad_width .* is not an int"),
    (lambda: rlx.jit(lambda a: rlx.nn.pad(a, "x"))(X), "pad: pad_width must be integers"),
    (lambda: rlx.jit(lambda a: a.swapaxes(0, 3))(X), "axis 3 is out of range for rank 3"),
])
def test_bad_arguments_are_located_errors(call, message):
    with pytest.raises(rlx.RlxError, match=message) as e:
        call()
    assert str(e.value).startswith(__file__), str(e.value)


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid",
                                  "silu", "gelu", "arctan", "rsqrt"])
def test_float_functions_of_integers_are_f32_as_in_jax(name):
    """jnp.exp and friends promote integers to f32 (jax.nn's reject them: rlx promotes)."""
    ints = np.array([1, 2, 3], np.int32)
    got = rlx.jit(lambda a: getattr(rlx.nn, name)(a))(ints)
    want = rlx.jit(lambda a: getattr(rlx.nn, name)(a))(ints.astype(np.float32))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)
    if name in ("exp", "log", "sqrt", "sin", "tanh"):
        close(got, getattr(jax.numpy, name)(ints))


def test_concat_of_f32_and_f64_is_f64():
    got = rlx.jit(lambda a, b: rlx.nn.concat([a, b, a]))(np.ones(2, np.float32), np.full(2, 2.0))
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [1, 1, 2, 2, 1, 1])


def test_astype_from_float_to_integer_truncates_like_numpy():
    """``.astype(int)`` rounds toward zero (numpy, JAX), so bucketing ``(x * 4).astype``
    stays in range; ``rlx.cast`` itself keeps SPEC's half-away-from-zero rounding."""
    v = np.array([0.5, 1.5, 2.5, -0.5, 1.7, -1.7, 3.0, -3.0, 0.99], np.float32)
    for dtype in (np.int32, np.int64, "i32"):
        np.testing.assert_array_equal(rlx.jit(lambda x, d=dtype: x.astype(d))(v),
                                      v.astype(np.int32))
    np.testing.assert_array_equal(rlx.jit(lambda x: x.astype(np.int64))(v.astype(np.float64)),
                                  v.astype(np.int64))
    buckets = np.linspace(0, 0.99, 8).astype(np.float32)
    np.testing.assert_array_equal(rlx.jit(lambda x: (x * 4).astype(np.int32))(buckets),
                                  (buckets * 4).astype(np.int32))
    b = rlx.Builder("c")
    b.ret(b.cast(b.input("x", (9,)), "i32"))
    (rounded,) = rlx.compile(b.module)(v)
    np.testing.assert_array_equal(rounded, np.sign(v) * np.floor(np.abs(v) + 0.5))


@pytest.mark.parametrize("name,f", [
    ("bool * int", lambda x: (x > 0) * 2), ("int - bool", lambda x: 2 - (x > 0)),
    ("bool + bool", lambda x: (x > 0) + (x > 1)), ("bool * bool", lambda x: (x > 0) * (x > 1)),
    ("bool max", lambda x: (x > 0).max(axis=0)), ("bool min", lambda x: (x > 0).min()),
    ("cumsum of bool", lambda x: (rlx.nn if isinstance(x, rlx.Tensor) else jax.numpy)
     .cumsum(x > 0)),
])
def test_bool_arithmetic_follows_jax(name, f):
    """numpy/JAX promotion: a bool tensor with a Python int is an int32, bool + bool is
    or, bool * bool is and, bool max / min are any / all, cumsum counts."""
    x = np.array([[-1.0, 0.5, 2.0], [0.0, 3.0, -2.0]], np.float32)
    got, want = rlx.jit(f)(x), np.asarray(f(jax.numpy.asarray(x)))
    assert got.dtype == (np.int32 if want.dtype.kind == "i" else want.dtype), name  # JAX x32
    np.testing.assert_array_equal(got, want)


def test_bool_subtract_and_torch_spellings_are_clear_errors():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(rlx.RlxError, match="boolean subtract"):
        rlx.jit(lambda a: (a > 0) - (a > 1))(x)
    with pytest.raises(AttributeError, match=r"no attribute 'view' .*use \.reshape"):
        rlx.jit(lambda a: a.view(3, 2))(x)
    with pytest.raises(AttributeError, match="no attribute 'nonsense'$"):
        rlx.jit(lambda a: a.nonsense)(x)
    np.testing.assert_array_equal(rlx.jit(lambda a: a * a.size)(x), x * 6)


@pytest.mark.parametrize("logits_shape,labels_shape,weighted", [
    ((12, 5), (12,), False), ((12, 5), (12,), True), ((3, 5, 4), (3, 4), False),
    ((2, 5, 3, 4), (2, 3, 4), True)])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_matches_torch_with_weights_smoothing_and_extra_dims(
        logits_shape, labels_shape, weighted, reduction, label_smoothing, rng):
    """F.cross_entropy's weight=, label_smoothing= and [N, C, d1, ...] logits, with ignored
    rows: values and gradients in f64, jit in f32."""
    classes = logits_shape[1]
    z = rng.standard_normal(logits_shape)
    y = rng.integers(0, classes, labels_shape).astype(np.int64)
    y.flat[::5] = -100
    w = rng.uniform(0.2, 2.0, classes) if weighted else None
    kw = dict(reduction=reduction, label_smoothing=label_smoothing, weight=w)
    tz = torch.tensor(z, requires_grad=True)
    want = torch.nn.functional.cross_entropy(
        tz, torch.tensor(y), reduction=reduction, label_smoothing=label_smoothing,
        weight=None if w is None else torch.tensor(w))
    np.testing.assert_allclose(rlx.jit(lambda v: rlx.nn.cross_entropy(v, y, **kw))(z),
                               want.detach().numpy(), rtol=1e-10, atol=1e-12)
    grad = rlx.grad(lambda v: rlx.nn.cross_entropy(v, y, **kw).sum())(z)
    np.testing.assert_allclose(grad, torch.autograd.grad(want.sum(), tz)[0].numpy(),
                               rtol=1e-9, atol=1e-12)
    f32 = rlx.jit(lambda v: rlx.nn.cross_entropy(v, y, **kw))(z.astype(np.float32))
    np.testing.assert_allclose(f32, want.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_cross_entropy_argument_errors():
    z, y = np.zeros((4, 3), np.float32), np.zeros(4, np.int32)
    with pytest.raises(rlx.RlxError, match=r"weight must have one entry per class, shape \(3,\)"):
        rlx.jit(lambda v: rlx.nn.cross_entropy(v, y, weight=np.ones(4, np.float32)))(z)
    with pytest.raises(rlx.RlxError, match=r"label_smoothing=1.5 must be in \[0, 1\]"):
        rlx.jit(lambda v: rlx.nn.cross_entropy(v, y, label_smoothing=1.5))(z)
    everything_ignored = np.full(4, -100, np.int32)
    assert rlx.jit(lambda v: rlx.nn.cross_entropy(v, everything_ignored))(z) == 0.0


def test_attention_causal_with_padding_and_broadcast_biases_match_torch(rng):
    """mask_kind='causal' with a [B, S_kv] key-padding mask, and additive biases that
    broadcast to the scores ([S, S_kv], [B, 1, 1, S_kv]): values and gradients against
    torch's SDPA; a bias that does not broadcast is a located error."""
    B, S, H, D = 2, 6, 2, 4
    q, k, v = (rng.standard_normal((B, S, H * D)) for _ in range(3))

    def heads(t):
        return t.reshape(B, S, H, D).transpose(1, 2)

    pad = np.ones((B, S), bool)
    pad[0, 4:], pad[1, 5:] = False, False
    causal_pad = (torch.tensor(np.tril(np.ones((S, S), bool)))[None, None]
                  & torch.tensor(pad)[:, None, None, :])
    cases = [(dict(mask=pad, mask_kind="causal"), causal_pad),
             (dict(mask=rng.standard_normal((S, S)), mask_kind="bias"), None),
             (dict(mask=rng.standard_normal((B, 1, 1, S))), None)]
    for kw, torch_mask in cases:
        torch_mask = torch.tensor(kw["mask"]) if torch_mask is None else torch_mask
        tq = torch.tensor(q, requires_grad=True)
        want = torch.nn.functional.scaled_dot_product_attention(
            heads(tq), heads(torch.tensor(k)), heads(torch.tensor(v)), attn_mask=torch_mask)
        want = want.transpose(1, 2).reshape(B, S, H * D)
        got = rlx.jit(lambda q, kw=kw: rlx.nn.attention(q, k, v, H, **kw))(q)
        np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-12, atol=1e-12)
        grad = rlx.grad(lambda q, kw=kw: (rlx.nn.attention(q, k, v, H, **kw) ** 2).sum())(q)
        np.testing.assert_allclose(grad, torch.autograd.grad((want ** 2).sum(), tq)[0].numpy(),
                                   rtol=1e-10, atol=1e-12)
    additive = np.where(pad, 0.0, -np.inf)
    with pytest.raises(rlx.RlxError, match="negative, infinite or NaN entries"):
        rlx.jit(lambda q: rlx.nn.attention(q, k, v, H, mask=additive, mask_kind="causal"))(q)
    with pytest.raises(rlx.RlxError, match=r"must broadcast to the scores .* got \[3, 6\]"):
        rlx.jit(lambda q: rlx.nn.attention(q, k, v, H, mask=np.zeros((3, S)),
                                           mask_kind="bias"))(q)


@pytest.mark.parametrize("shape", [(8, 3, 5, 5), (16, 4), (4, 3, 7)])
def test_batch_norm_matches_torch_in_training_and_eval(shape, rng):
    """F.batch_norm, functional: batch statistics and the running-statistics update in
    training (values, and gradients through the batch statistics), running statistics in
    eval; f64 against torch."""
    x, channels = rng.standard_normal(shape), shape[1]
    mean, var = rng.standard_normal(channels), rng.uniform(0.5, 2.0, channels)
    w, b = rng.standard_normal(channels), rng.standard_normal(channels)
    y, new_mean, new_var = rlx.jit(lambda v: rlx.nn.batch_norm(v, mean, var, w, b))(x)
    t_mean, t_var, tx = torch.tensor(mean), torch.tensor(var), torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.batch_norm(tx, t_mean, t_var, torch.tensor(w), torch.tensor(b),
                                          training=True)
    for got, ref in ((y, want.detach()), (new_mean, t_mean), (new_var, t_var)):
        np.testing.assert_allclose(got, ref.numpy(), rtol=1e-12, atol=1e-12)
    grad = rlx.grad(lambda v: (rlx.nn.batch_norm(v, weight=w, bias=b) ** 3).sum())(x)
    t_y = torch.nn.functional.batch_norm(tx, None, None, torch.tensor(w), torch.tensor(b),
                                         training=True)
    np.testing.assert_allclose(grad, torch.autograd.grad((t_y ** 3).sum(), tx)[0].numpy(),
                               rtol=1e-10, atol=1e-10)
    evaluated = rlx.jit(lambda v: rlx.nn.batch_norm(v, mean, var, w, b, training=False))(x)
    want_eval = torch.nn.functional.batch_norm(torch.tensor(x), torch.tensor(mean),
                                               torch.tensor(var), torch.tensor(w),
                                               torch.tensor(b), training=False)
    np.testing.assert_allclose(evaluated, want_eval.numpy(), rtol=1e-12, atol=1e-12)
    with pytest.raises(rlx.RlxError, match="training=False needs running_mean"):
        rlx.jit(lambda v: rlx.nn.batch_norm(v, training=False))(x)
    with pytest.raises(rlx.RlxError, match=r"\[N, C, \.\.\.\] with C >= 1"):
        rlx.jit(lambda v: rlx.nn.batch_norm(v))(x[:, :0])
    with pytest.raises(rlx.RlxError, match="more than one value per channel"):
        rlx.jit(lambda v: rlx.nn.batch_norm(v))(x[(slice(1), slice(None), *[slice(1)] * (x.ndim - 2))])


def test_grad_leaves_python_flag_arguments_as_python_values():
    """JAX's grad does not trace the arguments it does not differentiate: a Python bool or
    str there stays a Python value (one trace per value), so ``if training:`` works, also
    by keyword, under jit with static_argnums, and with argnums after the flag."""
    params, x = {"w": np.ones((3, 2), np.float32)}, np.ones((4, 3), np.float32)

    def loss(p, x, training, mode="plain"):
        h = x @ p["w"]
        h = h * 0.5 if training else h
        return (h * 3 if mode == "tripled" else h).sum()

    for args, kwargs in (((params, x, True), {}), ((params, x, False), {}),
                         ((params, x, True, "tripled"), {}), ((params, x), {"training": True})):
        value, grads = rlx.value_and_grad(loss)(*args, **kwargs)
        want_value, want_grads = jax.value_and_grad(loss)(*args, **kwargs)
        np.testing.assert_allclose(value, want_value)
        np.testing.assert_allclose(grads["w"], want_grads["w"])
    step = rlx.jit(lambda p, x, t: rlx.grad(loss)(p, x, t), static_argnums=2)
    np.testing.assert_allclose(step(params, x, True)["w"], jax.grad(loss)(params, x, True)["w"])
    flag_first = rlx.grad(lambda t, p: loss(p, x, t), argnums=1)
    np.testing.assert_allclose(flag_first(True, params)["w"], np.full((3, 2), 2.0))


def test_tree_map_and_leaves_follow_the_transformations_pytrees():
    """An SGD update over nested params with tree_map, leaves in key order, a clear error
    for trees of different structures."""
    params = {"w": np.ones((2, 2), np.float32), "layers": [{"b": np.zeros(2, np.float32)}, None]}
    grads = rlx.grad(lambda p: (p["w"] ** 2).sum() + p["layers"][0]["b"].sum())(params)
    updated = rlx.tree_map(lambda p, g: p - 0.5 * g, params, grads)
    np.testing.assert_array_equal(updated["w"], np.zeros((2, 2)))
    np.testing.assert_array_equal(updated["layers"][0]["b"], np.full(2, -0.5))
    assert updated["layers"][1] is None
    assert [leaf.shape for leaf in rlx.tree_leaves(updated)] == [(2,), (2, 2)]
    with pytest.raises(rlx.RlxError, match=r"tree 1 has another structure .*keys \['v'\]"):
        rlx.tree_map(lambda a, b: a, {"w": 1}, {"v": 1})


def test_a_list_of_traced_values_used_as_an_array_says_to_stack_it():
    """A parameter given as a Python list becomes traced scalars; numpy on them is a
    located error that names rlx.nn.stack."""
    x = np.ones(3, np.float32)
    with pytest.raises(rlx.RlxError, match=r"rlx\.nn\.stack\(values\)") as e:
        rlx.grad(lambda p: (x * p["w"]).sum())({"w": [1.0, 2.0, 3.0]})
    assert str(e.value).startswith(__file__)
    stacked = rlx.grad(lambda p: (x * rlx.nn.stack(p["w"])).sum())({"w": [1.0, 2.0, 3.0]})
    np.testing.assert_allclose(stacked["w"], [1.0, 1.0, 1.0])
