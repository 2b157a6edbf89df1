"""rlx.quant: int8 quantize/dequantize and fake quantization (SPEC 2.3.1, 3.9): native
code against the interpreter and numpy formulas, torch's fake quantization, the LSQ
paper's step-size gradient, straight-through estimates, vmap and jvp."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rlx_mlir as rlx

STES = ["identity", "clipped_identity", "tanh", "hard_tanh"]


def _x(shape=(6, 5), seed=0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _native_and_interpreted(fn, *args):
    traced = rlx.jit(fn).lower(*args)
    outs = rlx.interpret(traced.module, *args, entry=traced.name)
    return rlx.jit(fn)(*args), outs[0]


def _round(z):
    return np.sign(z) * np.floor(np.abs(z) + 0.5)


def test_quantize_and_dequantize_per_tensor_and_channel():
    x = _x() * 3
    q, interpreted = _native_and_interpreted(lambda x: rlx.quant.quantize(x, 0.02, 3), x)
    expected = np.clip(_round(x / np.float32(0.02)) + 3, -128, 127).astype(np.int8)
    assert q.dtype == np.int8 and np.array_equal(q, expected)
    assert np.array_equal(interpreted, expected)
    scale = np.array([0.01, 0.02, 0.03, 0.04, 0.05], np.float32)
    zp = np.array([0, 1, -1, 2, -128], np.int32)
    back, interpreted = _native_and_interpreted(
        lambda x: rlx.quant.dequantize(rlx.quant.quantize(x, scale, zp, axis=1), scale, zp,
                                       axis=1), x)
    levels = np.clip(_round(x / scale) + zp, -128, 127)
    np.testing.assert_allclose(back, (levels - zp) * scale, rtol=1e-6)
    np.testing.assert_array_equal(back, interpreted)


def test_qmatmul_requantizes_the_i32_accumulator():
    rng = np.random.default_rng(6)
    x = rng.integers(-128, 128, (33, 70)).astype(np.int8)
    w = rng.integers(-128, 128, (70, 17)).astype(np.int8)
    bias = rng.integers(-1000, 1000, 17).astype(np.int32)

    def qlinear(x, w, b):
        return rlx.quant.qmatmul(x, w, b, multiplier=0.0007, x_zero_point=3,
                                 w_zero_point=-2, out_zero_point=5)

    native, interpreted = _native_and_interpreted(qlinear, x, w, bias)
    acc = bias + (x.astype(np.int64) - 3) @ (w.astype(np.int64) + 2)
    expected = np.clip(_round(acc * np.float64(np.float32(0.0007))) + 5, -128, 127)
    assert native.dtype == np.int8
    np.testing.assert_array_equal(native, expected)
    np.testing.assert_array_equal(interpreted, expected)
    xs = rng.integers(-128, 128, (3, 33, 70)).astype(np.int8)
    np.testing.assert_array_equal(rlx.vmap(qlinear, in_axes=(0, None, None))(xs, w, bias),
                                  np.stack([qlinear(x, w, bias) for x in xs]))


def test_int8_arithmetic_wraps_as_numpy():
    a = np.array([100, -100, 5, -128], np.int8)
    for fn in (lambda a: a + a, lambda a: a * 3, lambda a: a // 7, lambda a: -a):
        np.testing.assert_array_equal(rlx.jit(fn)(a), fn(a))
    assert rlx.jit(lambda a, i: a + i)(a, np.ones(4, np.int32)).dtype == np.int32


@pytest.mark.parametrize("bits", [8, 4, 2])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_fake_quantize_matches_torch(bits, axis):
    """PerBatch scale ``max|x| / q``; torch rounds half to even, which no value here hits."""
    x = _x()
    qmax = 2 ** (bits - 1) - 1
    got, interpreted = _native_and_interpreted(
        lambda x: rlx.quant.fake_quantize(x, bits=bits, axis=axis), x)
    if axis is None:
        scale = float(np.abs(x).max() / qmax)
        expected = torch.fake_quantize_per_tensor_affine(torch.tensor(x), scale, 0, -qmax, qmax)
    else:
        scale = np.abs(x).max(axis=1 - axis) / qmax
        expected = torch.fake_quantize_per_channel_affine(
            torch.tensor(x), torch.tensor(scale), torch.zeros(x.shape[axis], dtype=torch.int32),
            axis, -qmax, qmax)
    np.testing.assert_allclose(got, expected.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(got, interpreted)
    columns = [got] if axis is None else np.moveaxis(got, axis, 0)
    assert all(len(np.unique(c)) <= 2 * qmax + 1 for c in columns)


@pytest.mark.parametrize("ste", STES)
@pytest.mark.parametrize("axis", [None, 1])
def test_straight_through_estimates(ste, axis):
    """SPEC 3.9's dx for each ste, with the forward (per-batch) scale."""
    x, dy = _x(), _x(seed=1)
    qmax = 7
    scale = np.abs(x).max(axis=None if axis is None else 0, keepdims=axis is not None) / qmax
    factor = {"identity": np.ones_like(x), "clipped_identity": np.abs(x) <= qmax * scale,
              "tanh": 1 - np.tanh(x / scale) ** 2,
              "hard_tanh": np.maximum(0, 1 - np.abs(x) / (qmax * scale))}[ste]
    grad = rlx.jit(rlx.grad(lambda x: (rlx.quant.fake_quantize(
        x, bits=4, axis=axis, ste=ste) * dy).sum()))(x)
    np.testing.assert_allclose(grad, dy * factor, rtol=1e-5, atol=1e-6)
    _, tangent = rlx.jvp(lambda x: rlx.quant.fake_quantize(x, bits=4, axis=axis, ste=ste),
                         (x,), (dy,))
    np.testing.assert_allclose(tangent, dy * factor, rtol=1e-5, atol=1e-6)


def test_fixed_scale_is_used_forward_and_backward():
    x = _x() * 4
    y = rlx.jit(lambda x: rlx.quant.fake_quantize(x, bits=8, scale=0.05,
                                                  ste="clipped_identity"))(x)
    np.testing.assert_allclose(y, np.clip(_round(x / np.float32(0.05)), -127, 127) * 0.05,
                               rtol=1e-6)
    g = rlx.grad(lambda x: rlx.quant.fake_quantize(x, bits=8, scale=0.05,
                                                   ste="clipped_identity").sum())(x)
    np.testing.assert_array_equal(g, (np.abs(x) <= 127 * np.float32(0.05)).astype(np.float32))


@pytest.mark.parametrize("axis", [None, 1])
def test_lsq_gradients_follow_the_paper(axis):
    """LSQ (Esser et al.): dx = dy [|z| <= q]; ds = sum dy (round(z) - z) inside, sign(z) q
    outside, z = x / s. PyTorch's learnable fake quantize masks by the rounded level, so
    it differs for |z| in (q, q + 1/2); the forward values agree."""
    x = _x() * 2
    step = np.float32(0.3) if axis is None else np.linspace(0.1, 0.5, 5).astype(np.float32)

    def loss(x, s):
        return (rlx.quant.fake_quantize_lsq(x, s, bits=4, axis=axis) ** 2).sum()

    gx, gs = rlx.jit(rlx.grad(loss, argnums=(0, 1)))(x, step)
    z = x / step
    y = np.clip(_round(z), -7, 7) * step
    inside = np.abs(z) <= 7
    np.testing.assert_allclose(gx, 2 * y * inside, rtol=1e-5, atol=1e-6)
    psi = np.where(inside, _round(z) - z, np.sign(z) * 7) * 2 * y
    np.testing.assert_allclose(gs, psi.sum() if axis is None else psi.sum(axis=0), rtol=1e-4)
    if axis is None:
        torch_y = torch._fake_quantize_learnable_per_tensor_affine(
            torch.tensor(x), torch.tensor([0.3]), torch.tensor([0.0]), -7, 7, 1.0)
        np.testing.assert_allclose(rlx.quant.fake_quantize_lsq(x, step, bits=4),
                                   torch_y.numpy(), rtol=1e-6)


def test_vmap_keeps_per_example_scales():
    xs = _x((3, 6, 5))
    for axis in (None, 1):
        def fq(x, axis=axis):
            return rlx.quant.fake_quantize(x, bits=4, axis=axis, ste="tanh")

        batched = rlx.vmap(fq)(xs)
        np.testing.assert_array_equal(batched, np.stack([fq(x) for x in xs]))
        g = rlx.grad(lambda x, fq=fq: (fq(x) ** 2).sum())
        np.testing.assert_allclose(rlx.vmap(g)(xs), np.stack([g(x) for x in xs]), rtol=1e-6)
    steps = np.array([0.1, 0.2, 0.3], np.float32)
    g = rlx.grad(lambda x, s: (rlx.quant.fake_quantize_lsq(x, s, bits=4) ** 2).sum(), argnums=1)
    np.testing.assert_allclose(rlx.vmap(g)(xs, steps),
                               [g(x, s) for x, s in zip(xs, steps, strict=True)], rtol=1e-6)


def test_qat_training_reduces_the_loss():
    """A linear model trained through 4-bit fake-quantized weights (clipped STE)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((64, 8)).astype(np.float32)
    y = x @ rng.standard_normal((8, 2)).astype(np.float32)

    def loss(w):
        wq = rlx.quant.fake_quantize(w, bits=4, axis=1, ste="clipped_identity")
        return ((x @ wq - y) ** 2).mean()

    step = rlx.jit(lambda w: w - 0.05 * rlx.grad(loss)(w))
    w = np.zeros((8, 2), np.float32) + 0.01
    first = float(rlx.jit(loss)(w))
    for _ in range(100):
        w = step(w)
    assert float(rlx.jit(loss)(w)) < 0.2 * first  # 4-bit weights keep a noise floor
    levels = rlx.quant.fake_quantize(w, bits=4, axis=1)
    assert all(len(np.unique(levels[:, c])) <= 15 for c in range(2))


@pytest.mark.parametrize("call, message", [
    (lambda: rlx.quant.fake_quantize(_x(), bits=3), "bits must be 8, 4 or 2"),
    (lambda: rlx.quant.fake_quantize(_x(), ste="sigmoid"), "ste must be one of identity"),
    (lambda: rlx.quant.quantize(_x(), np.ones(4, np.float32), axis=1),
     r"scale must be \[5\] \(the extent of axis 1\)"),
    (lambda: rlx.quant.quantize(_x().astype(np.int32), 0.1), "expected a float array"),
    (lambda: rlx.quant.dequantize(_x(), 0.1), "expected an i8 tensor"),
    (lambda: rlx.quant.qmatmul(np.ones((2, 3), np.int8), np.ones((3, 2), np.int32)),
     r"w must be a 2-d i8 array, got int32\[3, 2\]"),
    (lambda: rlx.quant.fake_quantize_lsq(_x(), 0.1, axis=2), "axis 2 is out of range"),
])
def test_errors_are_located(call, message):
    with pytest.raises(rlx.RlxError, match=message):
        call()


# ---------------------------------------------------------------- review regressions


def test_quantize_clamps_before_the_integer_cast():
    """|x / s| >= 2^31 wrapped to -128 natively; NaN gives the zero point."""
    x = np.array([5.0, -5.0, np.inf, -np.inf, np.nan, 3e9, 0.2], np.float32)
    native, interpreted = _native_and_interpreted(lambda x: rlx.quant.quantize(x, 1e-9, 4), x)
    expected = [127, -128, 127, -128, 4, 127, 127]
    np.testing.assert_array_equal(native, expected)
    np.testing.assert_array_equal(interpreted, expected)


def test_numbers_broadcast_over_channels_and_bad_constants_are_errors():
    x = np.ones((3, 5), np.float32)
    q = rlx.quant.quantize(x, np.full(5, 0.1, np.float32), axis=1)  # zero_point 0 for all
    np.testing.assert_array_equal(q, np.full((3, 5), 10))
    np.testing.assert_array_equal(rlx.quant.dequantize(q, 0.1, axis=1), x)
    for bad, message in [(None, "scale must be numbers"), ("a", "scale must be numbers"),
                         (-1.0, "scale must be positive"), (0.0, "scale must be positive")]:
        with pytest.raises(rlx.RlxError, match=message):
            rlx.quant.quantize(x, bad)
    with pytest.raises(rlx.RlxError, match="zero_point must be integers"):
        rlx.quant.quantize(x, 0.1, 2.5)


def test_int8_sums_are_i32():
    a = np.full(4, 100, np.int8)
    assert int(rlx.jit(lambda a: a.sum())(a)) == 400
    assert rlx.jit(lambda a: a.max())(a).dtype == np.int8
    np.testing.assert_array_equal(rlx.jit(lambda a: rlx.nn.cumsum(a))(a), [100, 200, 300, 400])


def test_scales_from_an_inner_trace():
    """x from the enclosing trace, the scale from the inner one (jacrev, grad, vmap)."""
    x = _x((4, 3))
    s = np.float32(0.2)
    jac = rlx.jacrev(lambda s, x: rlx.quant.fake_quantize_lsq(x, s).sum(0))(s, x)
    z = x / s  # LSQ: d out / d s = round(z) - z inside the range, sign(z) q outside
    psi = np.where(np.abs(z) <= 127, _round(z) - z, np.sign(z) * 127)
    np.testing.assert_allclose(jac, psi.sum(0), rtol=1e-5, atol=1e-6)
    g = rlx.jit(lambda x, s: rlx.grad(
        lambda s: (rlx.quant.fake_quantize(x, scale=s) ** 2).sum())(s))(x, s)
    assert float(g) == 0.0  # a fixed scale takes no gradient (fake_quantize_lsq learns one)
    y = rlx.jit(lambda x, s: rlx.vmap(lambda s: rlx.quant.fake_quantize_lsq(x, s))(
        s * np.ones(3, np.float32)))(x, s)
    np.testing.assert_array_equal(y[1], rlx.quant.fake_quantize_lsq(x, s))


def test_per_example_channel_scales_batch_without_unrolling():
    """vmap folds the batch into the channel axis: one op, any batch size."""
    xs = _x((64, 6, 5))
    scales = np.random.default_rng(7).uniform(0.05, 0.3, (64, 5)).astype(np.float32)

    def lsq(x, s):
        return rlx.quant.fake_quantize_lsq(x, s, bits=4, axis=1)

    step_grad = rlx.grad(lambda x, s: (lsq(x, s) ** 2).sum(), argnums=1)
    traced = rlx.trace(rlx.vmap(step_grad), (xs, scales))
    assert traced.as_text().count("rlx.fake_quantize_lsq_backward_scale") == 1
    got = rlx.jit(rlx.vmap(step_grad))(xs, scales)
    expected = np.stack([step_grad(x, s) for x, s in zip(xs[:4], scales[:4], strict=True)])
    np.testing.assert_allclose(got[:4], expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(rlx.vmap(lsq)(xs, scales)[2], lsq(xs[2], scales[2]))


def test_halves_and_numpy_integer_arguments():
    import ml_dtypes

    x = _x()
    assert rlx.quant.fake_quantize(x.astype(ml_dtypes.bfloat16), bits=4).dtype == \
        ml_dtypes.bfloat16
    q = rlx.quant.quantize(x, 0.1)
    assert rlx.quant.dequantize(q, 0.1, dtype="bf16").dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(rlx.quant.fake_quantize(x, axis=np.int64(1)),
                                  rlx.quant.fake_quantize(x, axis=1))


def test_fake_quantize_gradients_are_reported_as_surrogates():
    from rlx_mlir.testing import check_grads

    traced = rlx.trace(lambda x, s: (rlx.quant.fake_quantize_lsq(x, s) ** 2).sum(),
                       (_x(), np.float32(0.1)))
    report = check_grads(traced.module, traced.name)
    assert report.ok and all("straight-through" in (a.unchecked or "") for a in report.args)


def test_qmatmul_and_dequantize_arguments():
    q = np.ones((2, 3), np.int8)
    with pytest.raises(rlx.RlxError, match=r"x_zero_point must be an int in \[-128, 127\]"):
        rlx.quant.qmatmul(q, q.T.copy(), x_zero_point=2**40)
    with pytest.raises(rlx.RlxError, match="multiplier must be a positive number"):
        rlx.quant.qmatmul(q, q.T.copy(), multiplier="x")
    with pytest.raises(rlx.RlxError, match="zero_point must be an integer tensor"):
        rlx.jit(lambda x, z: rlx.quant.quantize(x, 0.1, z))(_x(), np.float32(2.7))
    import ml_dtypes

    half_scale = np.float32(0.1).astype(ml_dtypes.bfloat16)
    assert rlx.jit(lambda q, s: rlx.quant.dequantize(q, s, dtype="f32"))(
        q, half_scale).dtype == np.float32
    assert rlx.jit(lambda a: rlx.nn.top_k(a, 1))(np.array([3, 1], np.int8))[0].dtype == np.int8


def test_dequant_matmul_block_and_column_scales():
    """SPEC's DequantMatMul (Int8Block / Int8BlockAsym): x @ ((w_q - zp[k // bs]) *
    scale[k // bs]); per column without block_size; gradients reach x and a traced scale;
    wrong shapes and K not divisible by the block are located errors."""
    rng = np.random.default_rng(12)
    k, n, bs = 64, 24, 16
    w_q = rng.integers(-128, 128, (k, n)).astype(np.int8)
    scale = rng.uniform(0.01, 0.1, (k // bs, n)).astype(np.float32)
    zp = rng.integers(-5, 5, (k // bs, n)).astype(np.int32)
    x = rng.standard_normal((5, k)).astype(np.float32)
    w = ((w_q.astype(np.float64).reshape(k // bs, bs, n) - zp[:, None]) * scale[:, None])
    w = w.reshape(k, n)
    y = rlx.jit(lambda x: rlx.quant.dequant_matmul(x, w_q, scale, zp, block_size=bs))(x)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4, atol=1e-4)
    columns = rlx.quant.dequant_matmul(x, w_q, scale[0])
    np.testing.assert_allclose(columns, x @ (w_q * scale[0].astype(np.float64)), rtol=1e-4,
                               atol=1e-4)
    gx, gs = rlx.grad(lambda x, s: rlx.quant.dequant_matmul(x, w_q, s, zp, block_size=bs).sum(),
                      argnums=(0, 1))(x, scale)
    np.testing.assert_allclose(gx, np.ones((5, n)) @ w.T, rtol=1e-4, atol=1e-4)
    levels = w_q.astype(np.float64).reshape(k // bs, bs, n) - zp[:, None]
    want = (levels * (x.T @ np.ones((5, n))).reshape(k // bs, bs, n)).sum(axis=1)
    np.testing.assert_allclose(gs, want, rtol=1e-4, atol=1e-3)
    for call, message in (
            (lambda x: rlx.quant.dequant_matmul(x, w_q, scale, block_size=24),
             "block_size must be a positive int dividing K = 64"),
            (lambda x: rlx.quant.dequant_matmul(x, w_q, scale[:2], block_size=bs),
             r"scale must have shape \[4, 24\]"),
            (lambda x: rlx.quant.dequant_matmul(x, w_q.astype(np.int32), scale, block_size=bs),
             r"w_q must be a 2-d i8 array \[K, N\] for scheme 'int8', got int32"),
            (lambda x: rlx.quant.dequant_matmul(x, w_q, -scale, block_size=bs),
             "scale must be positive")):
        with pytest.raises(rlx.RlxError, match=message):
            rlx.jit(call)(x)


def test_dequant_matmul_numbers_and_numpy_arguments_inside_a_trace():
    """A number scale is one for every block and column; all-numpy arguments inside a
    trace become constants of it (as einsum's)."""
    w_q = np.array([[1, -2], [3, 4]], np.int8)
    x = np.ones((3, 2), np.float32)
    np.testing.assert_allclose(rlx.quant.dequant_matmul(x, w_q, 0.5), x @ (0.5 * w_q))
    y = rlx.jit(lambda z: z + rlx.quant.dequant_matmul(x, w_q, 0.5))(np.zeros((3, 2), np.float32))
    np.testing.assert_allclose(y, x @ (0.5 * w_q))
    lora = rlx.nn.lora_matmul(x, np.eye(2, dtype=np.float32), np.ones((2, 1), np.float32),
                              np.ones((1, 2), np.float32), scale=np.float32(0.5))
    np.testing.assert_allclose(lora, x + 0.5 * 2)


def _nibbles(packed: np.ndarray, signed: bool) -> np.ndarray:
    """``[K, N / 2]`` bytes as ``[K, N]`` levels, the low nibble first (SPEC Int4Block)."""
    low, high = (packed & 15).astype(np.int64), (packed >> 4).astype(np.int64)
    levels = np.stack([low, high], axis=-1).reshape(packed.shape[0], -1)
    return levels - 16 * (levels >= 8) if signed else levels


def _blocked(levels: np.ndarray, scale: np.ndarray) -> np.ndarray:
    k, n = levels.shape
    blocks = scale.shape[0]
    return (levels.reshape(blocks, k // blocks, n) * scale[:, None].astype(np.float64)
            ).reshape(k, n)


@pytest.mark.parametrize("scheme", ["int4", "uint4"])
def test_dequant_matmul_packed_nibbles(scheme):
    """Two levels a byte, low nibble first along N; signed (-8..7) or unsigned with a zero
    point; traced and eager agree; gradients reach x and the scale; a batch of x."""
    rng = np.random.default_rng(3)
    k, n, bs = 64, 10, 16
    packed = rng.integers(0, 256, (k, n // 2)).astype(np.uint8)
    scale = rng.uniform(0.01, 0.1, (k // bs, n)).astype(np.float32)
    zp = rng.integers(0, 16, (k // bs, n)) if scheme == "uint4" else None
    x = rng.standard_normal((2, 3, k)).astype(np.float32)
    levels = _nibbles(packed, scheme == "int4")
    if zp is not None:
        levels = levels - np.repeat(zp, bs, axis=0)
    w = _blocked(levels, scale)
    def f(x, s):
        return rlx.quant.dequant_matmul(x, packed, s, zp, block_size=bs, scheme=scheme)
    np.testing.assert_allclose(rlx.jit(f)(x, scale), x @ w, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(f(x, scale), x @ w, rtol=1e-5, atol=1e-5)
    gx, gs = rlx.grad(lambda x, s: f(x, s).sum(), argnums=(0, 1))(x, scale)
    np.testing.assert_allclose(gx, np.ones((2, 3, n)) @ w.T, rtol=1e-5, atol=1e-5)
    col_sums = x.reshape(-1, k).sum(0).reshape(k // bs, bs, 1)
    want = (levels.reshape(k // bs, bs, n) * col_sums).sum(axis=1)
    np.testing.assert_allclose(gs, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("scheme,dtype", [("fp8_e4m3", torch.float8_e4m3fn),
                                          ("fp8_e5m2", torch.float8_e5m2)])
def test_dequant_matmul_fp8_decodes_as_torch(scheme, dtype):
    """Every byte decodes as torch's float8 (OCP: E4M3 has no infinities, 448 is its
    largest value, 0x7f NaN); bytes as uint8 or as the ml_dtypes float8 type."""
    import ml_dtypes

    every = np.arange(256, dtype=np.uint8).reshape(1, 256)
    want = torch.from_numpy(every).view(dtype).double().numpy()
    one = np.ones((1, 1), np.float32)
    got = rlx.jit(lambda x: rlx.quant.dequant_matmul(x, every, 1.0, scheme=scheme))(one)
    np.testing.assert_array_equal(got, want.astype(np.float32))
    if scheme == "fp8_e4m3":
        assert got[0, 0x7E] == 448 and np.isnan(got[0, 0x7F]) and got[0, 0x78] == 256
    rng = np.random.default_rng(4)
    weights = rng.standard_normal((32, 8)).astype(getattr(ml_dtypes, str(dtype)[6:]))
    scale = rng.uniform(0.5, 2.0, 8).astype(np.float32)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    y = rlx.jit(lambda x: rlx.quant.dequant_matmul(x, weights, scale, scheme=scheme))(x)
    np.testing.assert_allclose(y, x @ (weights.astype(np.float64) * scale), rtol=1e-5,
                               atol=1e-5)


def test_dequant_matmul_nvfp4():
    """NVFP4: E2M1 nibbles times an E4M3 scale per 16 rows of K times a global scale."""
    import ml_dtypes

    rng = np.random.default_rng(5)
    k, n = 32, 6
    packed = rng.integers(0, 256, (k, n // 2)).astype(np.uint8)
    scale_bytes = rng.integers(0x20, 0x50, (k // 16, n)).astype(np.uint8)
    e2m1 = np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    scales = scale_bytes.view(ml_dtypes.float8_e4m3fn).astype(np.float64)
    w = _blocked(e2m1[_nibbles(packed, False)], scales) * 0.25
    x = rng.standard_normal((3, k)).astype(np.float32)
    y = rlx.jit(lambda x: rlx.quant.dequant_matmul(x, packed, scale_bytes, scheme="nvfp4",
                                                   global_scale=0.25))(x)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-5)
    gx = rlx.grad(lambda x: rlx.quant.dequant_matmul(x, packed, scale_bytes,
                                                     scheme="nvfp4").sum())(x)
    np.testing.assert_allclose(gx, np.ones((3, n)) @ (4 * w).T, rtol=1e-5, atol=1e-5)


def test_dequant_matmul_scheme_errors():
    """Unknown schemes, bytes of the wrong type or shape, and arguments a scheme does not
    take are located errors."""
    x = np.ones((2, 16), np.float32)
    packed = np.zeros((16, 2), np.uint8)
    scale = np.ones(4, np.float32)
    for call, message in (
            (lambda x: rlx.quant.dequant_matmul(x, packed, scale, scheme="int3"),
             "scheme must be one of int8, int4, uint4, fp8_e4m3, fp8_e5m2, nvfp4, got 'int3'"),
            (lambda x: rlx.quant.dequant_matmul(x, packed.astype(np.float32), scale,
                                                scheme="int4"),
             r"w_q must be a 2-d byte array \(int8 or uint8\) \[K, N / 2\] for scheme 'int4'"),
            (lambda x: rlx.quant.dequant_matmul(x, packed, scale[:2], scheme="int4"),
             r"scale must have shape \[4\]"),
            (lambda x: rlx.quant.dequant_matmul(x, packed, scale, zero_point=1,
                                                scheme="fp8_e4m3"),
             "scheme 'fp8_e4m3' takes no zero_point"),
            (lambda x: rlx.quant.dequant_matmul(x, packed, np.ones((1, 4), np.float32),
                                                scheme="nvfp4"),
             r"scale must be E4M3 bytes \(uint8, int8 or float8_e4m3fn\) of shape \[1, 4\]"),
            (lambda x: rlx.quant.dequant_matmul(x, packed, np.ones((1, 4), np.uint8),
                                                block_size=8, scheme="nvfp4"),
             "scheme 'nvfp4' has blocks of 16, got block_size=8"),
            (lambda x: rlx.quant.dequant_matmul(x, packed, np.ones((1, 4), np.uint8),
                                                scheme="nvfp4", global_scale=-1.0),
             "global_scale must be positive"),
            (lambda x: rlx.quant.dequant_matmul(x, packed.view(np.int8).astype(np.uint8), scale,
                                                scheme="int8"),
             r"w_q must be a 2-d i8 array \[K, N\] for scheme 'int8', got uint8")):
        with pytest.raises(rlx.RlxError, match=message):
            rlx.jit(call)(x)


def test_review_clipped_ste_keeps_the_range_defining_element():
    """``q * fl(max|x| / q)`` can round below ``max|x|``: the clipped estimate tested
    ``|x| <= q s`` and zeroed the largest element's gradient; it now tests the level
    ``|round(x / s)| <= q``, as torch's fake-quantize mask."""
    import torch

    x = np.array([0.5, -1.91, 1.0], np.float32)
    got = rlx.grad(lambda x: rlx.quant.fake_quantize(x, bits=4, ste="clipped_identity").sum())(x)
    t = torch.tensor(x, requires_grad=True)
    torch.fake_quantize_per_tensor_affine(t, float(np.float32(1.91) / np.float32(7)), 0, -7,
                                          7).sum().backward()
    np.testing.assert_array_equal(got, t.grad.numpy())
    wide = np.array([0.1, 5.0], np.float32)  # fixed scale 1, q = 7 at bits 4: 5 stays in
    fixed = rlx.grad(lambda x: rlx.quant.fake_quantize(x * 3, bits=4, scale=np.float32(1.0),
                                                       ste="clipped_identity").sum())(wide)
    np.testing.assert_array_equal(fixed, [3.0, 0.0])


def test_review_dequant_matmul_argument_errors():
    x = np.ones((1, 32), np.float32)
    with pytest.raises(rlx.RlxError, match="global_scale is for scheme 'nvfp4' only"):
        rlx.quant.dequant_matmul(x, np.ones((32, 2), np.int8), np.ones(2, np.float32),
                                 global_scale=2.0)
    with pytest.raises(rlx.RlxError, match="for scheme 'nvfp4'"):
        rlx.quant.dequant_matmul(x, np.zeros((32, 4), np.uint8), np.ones((2, 8), np.float32),
                                 scheme="nvfp4")


def test_review_half_activations_with_f32_scales_promote():
    """bf16 / f16 activations next to f32 scale arrays compute in f32 (JAX's promotion);
    they were refused with an error blaming ``x``. A bf16 numpy scale works eagerly."""
    import ml_dtypes

    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 64)).astype(ml_dtypes.bfloat16)
    w = rng.integers(-128, 128, (64, 32)).astype(np.int8)
    s32 = np.full(32, 0.02, np.float32)
    want = x.astype(np.float32) @ (w.astype(np.float32) * s32)
    for fn in (rlx.quant.dequant_matmul, rlx.jit(rlx.quant.dequant_matmul)):
        got = fn(x, w, s32)
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    half = rlx.quant.dequant_matmul(x, w, s32.astype(ml_dtypes.bfloat16))
    assert half.dtype == ml_dtypes.bfloat16
    assert rlx.quant.fake_quantize(x, bits=4, axis=1, scale=np.full(64, .1, np.float32)).dtype \
        == np.float32
