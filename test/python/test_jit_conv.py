"""The JIT against the interpreter on the conv family and its backward ops, and a small
CNN's gradient function (JIT == interpreter == torch.autograd)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_grad_conv import CONV_CASES as GRAD_CONV_CASES
from test_grad_conv import POOL_CASES as GRAD_POOL_CASES
from test_grad_conv import build_cnn, torch_cnn_grads

import rlx_mlir as rlx
from rlx_mlir.dialects.base import tensor
from rlx_mlir.runtime.jit import compile as jit_compile

NP = {"f32": np.float32, "f64": np.float64}
RTOL = {"f32": 1e-5, "f64": 1e-12}

# test_grad_conv's cases (x shape, w shape, stride, padding, dilation, groups) and one more
CONV_CASES = {
    **GRAD_CONV_CASES,
    # padding wider than the kernel's reach: outputs that see only padding, dy rows that
    # land outside dx (the gather drops them)
    "padding_beyond_reach": ((1, 2, 3, 2), (2, 2, 1, 2), (2, 1), (3, 2), (1, 1), 1),
}

# test_grad_conv's cases (x shape, kernel, stride, padding) and one more
POOL_CASES = {**GRAD_POOL_CASES, "one_by_one": ((1, 2, 3, 4), (1, 1), (1, 1), (0, 0))}


def assert_jit_matches_interpreter(module, arrays, dtype, entry=None):
    got = jit_compile(module, entry=entry)(*arrays)
    want = rlx.interpret(module, *arrays, entry=entry)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype], err_msg=f"result {i}")
    return got


# ---------------------------------------------------------------- conv2d and its backward ops


def conv_module(x_shape, w_shape, dtype, **attrs):
    """conv2d with and without bias, conv2d_backward_input and _weight, in one function."""
    b = rlx.Builder("f")
    x, w = b.input("x", x_shape, dtype), b.input("w", w_shape, dtype)
    bias = b.input("bias", (w_shape[0],), dtype)
    y = b.conv2d(x, w, bias, **attrs)
    dy = b.input("dy", y.shape, dtype)
    b.ret(y, b.conv2d(x, w, **attrs),
          b.emit("conv2d_backward_input", dy, w, out=[tensor(x_shape, dtype)], **attrs),
          b.emit("conv2d_backward_weight", x, dy, out=[tensor(w_shape, dtype)], **attrs))
    return b.module, y.shape


def check_conv(x_shape, w_shape, stride, padding, dilation, groups, dtype, rng):
    attrs = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    module, y_shape = conv_module(x_shape, w_shape, dtype, **attrs)
    arrays = [rng.standard_normal(s).astype(NP[dtype])
              for s in (x_shape, w_shape, (w_shape[0],), y_shape)]
    assert_jit_matches_interpreter(module, arrays, dtype)


@pytest.mark.parametrize("case", sorted(CONV_CASES))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_conv_ops_jit_match_interpreter(case, dtype, rng):
    check_conv(*CONV_CASES[case], dtype, rng)


@st.composite
def conv_configs(draw):
    groups = draw(st.integers(1, 3))
    c_in, c_out = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, 3)), draw(st.integers(0, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    hw = [draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 7))
          for k, p, d in zip(kernel, padding, dilation, strict=True)]
    x_shape = (draw(st.integers(1, 2)), c_in, *hw)
    return x_shape, (c_out, c_in // groups, *kernel), stride, padding, dilation, groups


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=conv_configs(), dtype=st.sampled_from(["f32", "f64"]))
def test_random_conv_configs(config, dtype, rng):
    check_conv(*config, dtype, rng)


# ---------------------------------------------------------------- pools and max_pool2d_backward


def pool_module(x_shape, dtype, **attrs):
    b = rlx.Builder("f")
    x = b.input("x", x_shape, dtype)
    p = b.max_pool2d(x, **attrs)
    dy = b.input("dy", p.shape, dtype)
    b.ret(p, b.avg_pool2d(x, **attrs), b.max_pool2d_backward(x, dy, **attrs))
    return b.module, p.shape


def check_pools(x, kernel, stride, padding, rng):
    dtype = {np.float32: "f32", np.float64: "f64"}[x.dtype.type]
    module, y_shape = pool_module(x.shape, dtype, kernel=kernel, stride=stride, padding=padding)
    dy = rng.standard_normal(y_shape).astype(x.dtype)
    return assert_jit_matches_interpreter(module, [x, dy], dtype)


@pytest.mark.parametrize("case", sorted(POOL_CASES))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_pool_ops_jit_match_interpreter(case, dtype, rng):
    x_shape, kernel, stride, padding = POOL_CASES[case]
    check_pools(rng.standard_normal(x_shape).astype(NP[dtype]), kernel, stride, padding, rng)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_max_pool_backward_ties_go_to_the_first_max(dtype, rng):
    """Few distinct values: many ties inside overlapping windows."""
    x = rng.integers(0, 2, (2, 2, 7, 7)).astype(NP[dtype])
    check_pools(x, (3, 3), (2, 2), (1, 1), rng)
    check_pools(x, (3, 3), (1, 1), (1, 1), rng)


def test_max_pool_padding_never_wins_against_minus_infinity(rng):
    """All in-bounds taps -inf: the max is -inf and the gradient goes to the first
    in-bounds tap, never to a padding position."""
    x = np.full((1, 1, 4, 4), -np.inf, np.float32)
    x[0, 0, 3, 3] = 1.0
    _, _, dx = check_pools(x, (3, 3), (2, 2), (1, 1), rng)
    assert dx[0, 0, 0, 0] != 0 and dx[0, 0, 3, 3] != 0


def test_max_pool_nan_is_the_max_and_first_nan_wins(rng):
    x = rng.standard_normal((1, 2, 6, 6))
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = x[0, 1, 4, 0] = np.nan
    max_pool, _, dx = check_pools(x, (3, 3), (2, 2), (1, 1), rng)
    assert np.isnan(max_pool[0, 0, 0, 0]) and np.isnan(max_pool[0, 0, 1, 1])


@st.composite
def pool_configs(draw):
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = tuple(draw(st.integers(0, k // 2)) for k in kernel)
    hw = [draw(st.integers(max(1, k - 2 * p), 7)) for k, p in zip(kernel, padding, strict=True)]
    return (draw(st.integers(1, 2)), draw(st.integers(1, 2)), *hw), kernel, stride, padding


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=pool_configs(), dtype=st.sampled_from(["f32", "f64"]), ties=st.booleans())
def test_random_pool_configs(config, dtype, ties, rng):
    x_shape, kernel, stride, padding = config
    x = rng.integers(0, 3, x_shape) if ties else rng.standard_normal(x_shape)
    check_pools(x.astype(NP[dtype]), kernel, stride, padding, rng)


# ---------------------------------------------------------------- a small CNN, end to end
# (the model and its torch reference are shared with test_grad_conv.py)


def test_small_cnn_gradient_jit_matches_interpreter_and_torch(rng):
    b = build_cnn()
    entry = rlx.grad_with_loss(b.module, "cnn").sym_name.data
    x = rng.standard_normal((4, 2, 8, 8)).astype(np.float32)
    labels = np.array([0, 3, 1, 4], np.int64)
    params = [rng.standard_normal(s).astype(np.float32) * 0.5
              for s in ((3, 2, 3, 3), (3,), (48, 5), (5,))]
    arrays = [x, labels, *params, np.float32(1.0)]
    _, *grads = assert_jit_matches_interpreter(b.module, arrays, "f32", entry=entry)
    for name, got, want in zip(["w1", "b1", "w2", "b2"], grads,
                               torch_cnn_grads(x, labels, *params), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max(),
                                   err_msg=name)
