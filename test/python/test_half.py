"""f16 and bf16: storage types that ops compute on in f32, rounding each result back (as
PyTorch eager on a CPU). Casts are bit-exact against numpy/ml_dtypes, natively and in the
interpreter; values and gradients are compared with torch's bf16/f16 eager mode."""

from __future__ import annotations

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
import torch

import rlx_mlir as rlx

BF16 = np.dtype(ml_dtypes.bfloat16)
HALVES = [("bf16", BF16, torch.bfloat16), ("f16", np.dtype(np.float16), torch.float16)]


def _hard_floats(n: int = 20000) -> np.ndarray:
    """Normals over the whole f32 exponent range, subnormals, ties, specials."""
    rng = np.random.default_rng(0)
    with np.errstate(over="ignore"):
        x = (rng.standard_normal(n) * np.float32(10) ** rng.integers(-45, 39, n)).astype(
            np.float32)
    bits = [0x3F808000, 0x3F818000, 0x7F7FFFFF, 0x00000001, 0x807FFFFF, 0x477FF000,
            0x477FE000, 0x33000000, 0x33000001]
    x[:len(bits)] = np.array(bits, np.uint32).view(np.float32)
    x[-6:] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 65520.0]
    return x


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return bool(np.all((a.view(np.uint16) == b.view(np.uint16)) | nan))


def _native_and_interpreted(fn, *args):
    traced = rlx.jit(fn).lower(*args)
    (interpreted,) = rlx.interpret(traced.module, *args, entry=traced.name)
    return rlx.jit(fn)(*args), interpreted


@pytest.mark.parametrize("name, dtype, _", HALVES)
@pytest.mark.parametrize("source", [np.float32, np.float64])
def test_rounding_to_half_is_bit_exact(name, dtype, _, source):
    x = _hard_floats().astype(source)
    with np.errstate(over="ignore"):
        expected = x.astype(dtype)
    for got in _native_and_interpreted(lambda a: a.astype(name), x):
        assert got.dtype == dtype
        assert _same_bits(got, expected)


@pytest.mark.parametrize("name, dtype, _", HALVES)
def test_widening_and_half_to_half_are_exact(name, dtype, _):
    with np.errstate(over="ignore"):
        h = _hard_floats().astype(dtype)
    for got in _native_and_interpreted(lambda a: a.astype("f64"), h):
        np.testing.assert_array_equal(got, h.astype(np.float64))
    other = "f16" if name == "bf16" else "bf16"
    with np.errstate(over="ignore"):
        expected = h.astype(np.float32).astype(BF16 if other == "bf16" else np.float16)
    for got in _native_and_interpreted(lambda a: a.astype(other), h):
        assert _same_bits(got, expected)


@pytest.mark.parametrize("name, dtype, _", HALVES)
def test_integer_casts(name, dtype, _):
    ints = np.array([0, 1, -3, 255, 257, 2049, 65519, 65521, 2**24 + 1, -2**31], np.int32)
    with np.errstate(over="ignore"):
        expected = ints.astype(dtype)
    for got in _native_and_interpreted(lambda i: i.astype(name), ints):
        assert _same_bits(got, expected)
    h = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 300.75, 0.0], dtype)
    for got in _native_and_interpreted(lambda a: a.astype("i32"), h):  # truncates (numpy)
        np.testing.assert_array_equal(got, np.trunc(h.astype(np.float32)))
    rounded = _native_and_interpreted(lambda a: a.builder.cast(a, "i32"), h)  # rlx.cast
    for got in rounded:  # the op rounds half away from zero (SPEC)
        np.testing.assert_array_equal(got, np.sign(h.astype(np.float32)) * np.floor(
            np.abs(h.astype(np.float32)) + 0.5))
    for got in _native_and_interpreted(lambda a: a.astype("i1"), h):
        np.testing.assert_array_equal(got, h.astype(np.float32) != 0)


def _model(x, w, b, g):
    h = rlx.nn.gelu(x @ w + b) * 0.5
    h = rlx.nn.layer_norm(h, g, b)
    return rlx.nn.softmax(h * h - rlx.nn.exp(rlx.nn.tanh(h)), axis=-1)


def _torch_model(x, w, b, g):
    h = torch.nn.functional.gelu(x @ w + b) * 0.5
    h = torch.nn.functional.layer_norm(h, (h.shape[-1],), g, b)
    return torch.softmax(h * h - torch.exp(torch.tanh(h)), dim=-1)


def _inputs(dtype: np.dtype) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    shapes = [(48, 64), (64, 32), (32,), (32,)]
    return [(0.3 * rng.standard_normal(s)).astype(dtype) for s in shapes]


@pytest.mark.parametrize("_, dtype, torch_dtype", HALVES)
def test_ops_round_each_result_like_torch(_, dtype, torch_dtype):
    args = _inputs(dtype)
    native, interpreted = _native_and_interpreted(_model, *args)
    assert native.dtype == interpreted.dtype == dtype
    expected = _torch_model(*(torch.tensor(a.astype(np.float32)).to(torch_dtype)
                              for a in args)).float().numpy()
    ulp = 2.0 ** -7 if dtype == BF16 else 2.0 ** -10
    np.testing.assert_allclose(native.astype(np.float32), expected, rtol=4 * ulp, atol=ulp / 8)
    np.testing.assert_allclose(native.astype(np.float32), interpreted.astype(np.float32),
                               rtol=2 * ulp, atol=ulp / 16)


def test_reductions_accumulate_in_f32():
    """A bf16 accumulator stalls at 256 (256 + 1 rounds back to 256); torch and JAX sum in
    f32 and round once."""
    ones = np.ones(4096, BF16)
    for got in _native_and_interpreted(lambda a: a.sum(), ones):
        assert got.dtype == BF16 and float(got) == 4096.0
    x = np.ones((64, 512), BF16)
    for got in _native_and_interpreted(lambda a, b: a @ b, x, x.T.copy()):
        assert float(got.astype(np.float32).min()) == 512.0


@pytest.mark.parametrize("a, b", [("bf16", "f32"), ("f16", "bf16"), ("bf16", "f64"),
                                  ("f16", "f16"), ("i32", "bf16"), ("f16", "i64"),
                                  ("i1", "bf16")])
def test_promotion_follows_jax(a, b):
    names = {"bf16": BF16, "f16": np.float16, "f32": np.float32, "f64": np.float64,
             "i32": np.int32, "i64": np.int64, "i1": np.bool_}
    x, y = np.ones(3, names[a]), np.ones(3, names[b])
    got = rlx.jit(lambda x, y: x + y)(x, y).dtype
    expected = jnp.promote_types(jnp.dtype(names[a]), jnp.dtype(names[b]))
    if {a, b} & {"i32", "i64"} and {a, b} & {"bf16", "f16"}:
        expected = jnp.dtype(names[a if a in ("bf16", "f16") else b])  # numpy ints are weak
    assert got == np.dtype(expected), (a, b)
    assert rlx.jit(lambda x: x * 2.5 + 1)(np.ones(3, BF16)).dtype == BF16  # weak scalars


def _mlp_loss(p, x, y):
    h = rlx.nn.relu(x @ p["w1"] + p["b1"])
    return rlx.nn.cross_entropy(h @ p["w2"] + p["b2"], y)


def _torch_mlp_loss(p, x, y):
    h = torch.relu(x @ p["w1"] + p["b1"])
    return torch.nn.functional.cross_entropy(h @ p["w2"] + p["b2"], y)


@pytest.mark.parametrize("_, dtype, torch_dtype", HALVES)
def test_training_step_gradients_match_torch(_, dtype, torch_dtype):
    rng = np.random.default_rng(2)
    p = {"w1": 0.1 * rng.standard_normal((64, 48)), "b1": 0.1 * rng.standard_normal(48),
         "w2": 0.1 * rng.standard_normal((48, 10)), "b2": np.zeros(10)}
    p = {k: v.astype(dtype) for k, v in p.items()}
    x, y = rng.standard_normal((32, 64)).astype(dtype), rng.integers(0, 10, 32).astype(np.int32)
    loss, grads = rlx.jit(rlx.value_and_grad(_mlp_loss))(p, x, y)
    pt = {k: torch.tensor(v.astype(np.float32)).to(torch_dtype).requires_grad_()
          for k, v in p.items()}
    xt = torch.tensor(x.astype(np.float32)).to(torch_dtype)
    lt = _torch_mlp_loss(pt, xt, torch.tensor(y).long())
    lt.backward()
    assert loss.dtype == dtype and abs(float(loss) - lt.item()) <= 2e-2 * abs(lt.item())
    for k, g in grads.items():
        assert g.dtype == dtype, k
        ref = pt[k].grad.float().numpy()
        err = np.abs(g.astype(np.float32) - ref).max() / np.abs(ref).max()
        assert err < 3e-2, (k, err)


def test_vmap_jvp_and_scan_carry_bf16():
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((4, 5)).astype(BF16)
    out = rlx.vmap(lambda r: rlx.nn.softmax(r, axis=0))(xs)
    expected = torch.softmax(torch.tensor(xs.astype(np.float32)).bfloat16(), dim=1)
    np.testing.assert_allclose(out.astype(np.float32), expected.float().numpy(), rtol=2e-2)
    primal, tangent = rlx.jvp(lambda a: rlx.nn.tanh(a) * a, (xs,), (np.ones_like(xs),))
    x32 = xs.astype(np.float32)
    assert primal.dtype == tangent.dtype == BF16
    np.testing.assert_allclose(tangent.astype(np.float32),
                               np.tanh(x32) + x32 * (1 - np.tanh(x32) ** 2), atol=3e-2)

    def rnn(h0, xs):
        h, hs = rlx.scan(lambda h, x: (rlx.nn.tanh(h + x),) * 2, h0, xs)
        return (hs * hs).sum()

    h0 = np.zeros(5, BF16)
    value, grad = rlx.jit(rlx.value_and_grad(rnn))(h0, xs)
    ht = torch.zeros(5, dtype=torch.bfloat16, requires_grad=True)
    h, total = ht, 0
    for row in torch.tensor(x32).bfloat16():
        h = torch.tanh(h + row)
        total = total + (h * h).sum()
    total.backward()
    assert value.dtype == grad.dtype == BF16
    np.testing.assert_allclose(float(value), total.item(), rtol=2e-2)
    np.testing.assert_allclose(grad.astype(np.float32), ht.grad.float().numpy(),
                               rtol=5e-2, atol=2e-2)


def test_half_inputs_are_checked_and_named():
    f = rlx.jit(lambda a: a * 2)
    assert f(np.ones(2, BF16)).dtype == BF16 and f(np.ones(2, np.float32)).dtype == np.float32
    b = rlx.Builder("f")
    x = b.input("x", (3,), "bf16")
    b.ret(b.cast(x, "f32"))
    with pytest.raises(rlx.RlxError, match="expected dtype bfloat16 .bf16., got float32"):
        rlx.compile(b.module)(np.ones(3, np.float32))
    with pytest.raises(rlx.RlxError, match="draw f32 and round with .astype"):
        rlx.random.uniform(0, (2,), dtype="bf16")
    assert rlx.nn.one_hot(np.array([1, 0]), 3, dtype="bf16").dtype == BF16


# ---------------------------------------------------------------- review regressions


def test_rounding_functions_and_integer_casts_of_halves():
    a = np.array([0.3, -0.3, 1.7, -2.2, 2.5], BF16)
    np.testing.assert_array_equal(rlx.jit(rlx.nn.floor)(a), np.floor(a.astype(np.float32)))
    np.testing.assert_array_equal(rlx.jit(rlx.nn.ceil)(a), np.ceil(a.astype(np.float32)))
    h = np.array([2.7, -2.7, 0.5, 1.5], np.float16)
    np.testing.assert_array_equal(rlx.jit(lambda a: a.astype("i32"))(h), h.astype(np.int32))
    assert rlx.jit(lambda a: a.var())(np.ones(4, BF16)).dtype == BF16
    values, ids = rlx.jit(lambda a: rlx.nn.top_k(a, 2))(np.array([1, 3, 2, 0], BF16))
    assert values.dtype == BF16 and list(ids) == [1, 2]


def test_control_flow_with_half_carries_and_python_numbers():
    two = np.array(2.0, BF16)
    assert rlx.jit(lambda a: rlx.cond(a > 0, lambda: a, lambda: 0.0))(two).dtype == BF16
    assert float(rlx.jit(lambda a: rlx.fori_loop(0, 3, lambda i, c: 0.5, a))(two)) == 0.5
    grown = rlx.jit(lambda n, a: rlx.fori_loop(0, n, lambda i, c: c * 2, a))(
        np.int32(3), np.ones(3, BF16))
    assert grown.dtype == BF16 and list(grown.astype(np.float32)) == [8, 8, 8]
    count, doubled = rlx.jit(lambda a: rlx.while_loop(
        lambda s: s[0] < 3, lambda s: (s[0] + 1, s[1] * 2), (0, a)))(np.ones(3, BF16))
    assert int(count) == 3 and doubled.dtype == BF16
    total, ys = rlx.jit(lambda xs: rlx.scan(lambda c, v: (c + v, c.astype("f32")),
                                            xs[0], xs))(np.ones(4, BF16))
    assert float(total) == 5.0 and list(ys) == [1, 2, 3, 4]


def test_nn_functions_round_once_like_torch():
    """A composite rlx.nn function computes in f32 and rounds its result once."""
    x = np.random.default_rng(5).standard_normal(4096).astype(np.float32)
    xt = torch.tensor(x).bfloat16()
    for ours, theirs in [(rlx.nn.softplus, torch.nn.functional.softplus),
                         (rlx.nn.elu, torch.nn.functional.elu),
                         (lambda a: rlx.nn.log1p(rlx.nn.abs(a)), lambda a: torch.log1p(a.abs()))]:
        got = rlx.jit(ours)(x.astype(BF16))
        np.testing.assert_array_equal(got.astype(np.float32), theirs(xt).float().numpy())


def test_numpy_float_operands_promote_as_in_jax():
    ones = np.ones(2, BF16)
    assert rlx.jit(lambda a: a + np.ones(2, np.float32))(ones).dtype == np.float32
    assert rlx.jit(lambda a: a * np.float32(2))(ones).dtype == np.float32
    assert rlx.jit(lambda a: a * np.ones(2, np.float16))(ones).dtype == np.float32
    assert rlx.jit(lambda a, i: rlx.nn.concat([a, i]))(
        ones, np.arange(2, dtype=np.int32)).dtype == BF16


def test_jacobians_and_gradient_checks_take_halves():
    jac = rlx.jacfwd(lambda x: rlx.nn.tanh(x))(np.ones(2, BF16))
    assert jac.dtype == BF16 and jac.shape == (2, 2)
    np.testing.assert_allclose(jac.astype(np.float32), np.diag([1 - np.tanh(1.0) ** 2] * 2),
                               atol=4e-3)
    from rlx_mlir.testing import check_grads

    for dtype in (BF16, np.float16):
        traced = rlx.trace(lambda x: rlx.nn.tanh(x).astype("f32").sum(), (np.ones(3, dtype),))
        assert check_grads(traced.module, traced.name).ok


def test_saved_bf16_arrays_are_accepted(tmp_path):
    """np.save of a bf16 array loads back as 2-byte void data."""
    path = tmp_path / "x.npy"
    np.save(path, np.array([1.5, 2.0, 3.0], BF16))
    loaded = np.load(path)
    assert loaded.dtype.kind == "V"
    b = rlx.Builder("f")
    x = b.input("x", (3,), "bf16")
    b.ret(b.cast(x, "f32"))
    np.testing.assert_array_equal(rlx.compile(b.module)(loaded)[0], [1.5, 2.0, 3.0])


def test_mixed_storage_and_wide_operands_stay_wide():
    """A wide operand next to a storage one (not promoted by an operator) keeps the wide
    dtype: nothing narrows it back."""
    a, b = np.array([1, 2], np.int8), np.array([1000, 70000], np.int32)
    joined = rlx.jit(lambda a, b: rlx.nn.concat([a, b]))(a, b)
    assert joined.dtype == np.int32 and list(joined) == [1, 2, 1000, 70000]
    assert rlx.jit(lambda a, b: rlx.nn.stack([a, b]))(a, b).dtype == np.int32
    h = np.array([200, -200, 200, -200], np.float16)
    assert float(rlx.jit(lambda x: x.var())(h)) == 40000.0  # f32 inside, rounded once


def test_round_half_away_is_exact():
    x = np.array([0.49999997, -0.49999997, 0.5, -2.5, 8388609.0], np.float32)
    for got in _native_and_interpreted(lambda x: x.builder.round(x), x):
        np.testing.assert_array_equal(got, [0, -0, 1, -3, 8388609])
    q = rlx.jit(lambda x: rlx.quant.quantize(x, 1.0))(np.float32([0.49999997]))
    assert int(q[0]) == 0


@pytest.mark.parametrize("n", [9, 17, 33, 1001])
def test_bf16_rows_of_8k_plus_1_compile_and_match(n):
    """bf16 vectors of ``8k + 1`` lanes made LLVM abort the whole process ("Do not know
    how to soft promote this operator's operand!"): a bf16 op's vectors now hold a
    multiple of 16 lanes and the row's rest stays scalar. Values as ml_dtypes rounds."""
    bf16 = ml_dtypes.bfloat16
    x = np.linspace(-3, 3, 2 * n).astype(bf16).reshape(2, n)
    got = rlx.jit(lambda x: (-x, rlx.nn.exp(x), x > 0.5, x.astype("i32")))(x)
    wide = x.astype(np.float32)
    np.testing.assert_array_equal(got[0], (-wide).astype(bf16))
    np.testing.assert_array_equal(got[1], np.exp(wide).astype(bf16))
    np.testing.assert_array_equal(got[2], wide > 0.5)
    np.testing.assert_array_equal(got[3], np.trunc(wide).astype(np.int32))


def test_dot_general_preferred_element_type_keeps_f32_for_halves():
    bf16 = ml_dtypes.bfloat16
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 64)).astype(bf16), rng.standard_normal((64, 3)).astype(bf16)
    dims = (((1,), (0,)), ((), ()))
    got = rlx.jit(lambda a, b: rlx.dot_general(a, b, dims, preferred_element_type="f32"))(a, b)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-6)


def test_numpy_float128_data_is_an_error_not_rounded():
    """``np.ones(3, x.dtype)`` with an f16 tensor makes numpy float128 ('f16' is a 16-byte
    float to numpy); rlx.nn functions rounded it silently."""
    x = np.ones(3, np.float16)
    with pytest.raises(rlx.RlxError, match="float128"):
        rlx.jit(lambda x: rlx.nn.maximum(x, np.ones(3, "f16")))(x)


def test_half_floor_division_is_numpys():
    """``//`` and ``%`` of halves compute in f32 and round once (each op of the formula
    rounded to the half type: bf16 ``66 // 0.6640625`` gave 98 where numpy gives 99)."""
    bf16 = ml_dtypes.bfloat16
    for dt, a, b in [(bf16, [66.0, 548.0, -161.0], [0.6640625, 3.546875, 0.75]),
                     (np.float16, [344.0, 158.625], [0.339111328125, 0.09405517578125])]:
        a, b = np.array(a, dt), np.array(b, dt)
        q, r = rlx.jit(lambda a, b: divmod(a, b))(a, b)
        assert q.dtype == dt and r.dtype == dt
        np.testing.assert_array_equal(q, a // b)
        np.testing.assert_array_equal(r, a % b)


def test_python_number_jit_arguments_are_weakly_typed_as_in_jax():
    """A Python float argument (a learning rate) takes the bf16 params' dtype, where an
    np.float32 one promotes them to f32 (JAX's weak types); each traces separately."""
    import jax
    import jax.numpy as jnp

    p, g = np.ones(4, jnp.bfloat16), np.full(4, 0.5, jnp.bfloat16)
    ours = rlx.jit(lambda p, g, lr: p - lr * g)
    theirs = jax.jit(lambda p, g, lr: p - lr * g)
    for lr in (0.01, np.float32(0.01), 0.01):
        got, want = ours(p, g, lr), theirs(p, g, lr)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.astype(np.float32), np.asarray(want, np.float32))
    scale = rlx.jit(lambda x, n, s: (x * n, x * n * s))
    for got, want in zip(scale(np.ones(3, np.int8), 3, 2), jax.jit(lambda x, n, s: (x * n, x * n * s))(
            np.ones(3, np.int8), 3, 2), strict=True):
        assert got.dtype == want.dtype
