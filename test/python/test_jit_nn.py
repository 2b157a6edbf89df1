"""The JIT against the interpreter on the nn family and its backward ops (f32, f64),
every attribute variant, and whole gradient modules built with grad_with_loss."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlx_mlir as rlx
from rlx_mlir.runtime.jit import compile as jit_compile

NAMES = {np.float32: "f32", np.float64: "f64", np.int32: "i32", np.int64: "i64"}
DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 1e-5, np.float64: 1e-12}




def assert_close(got: tuple, want: list, dtype) -> None:
    """rtol per dtype; atol the same relative to the output's scale (cancellation)."""
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        finite = np.abs(w[np.isfinite(w)])
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype] * scale)


def check_op(op: str, *arrays: np.ndarray, **attrs) -> None:
    """``rlx.<op>`` on ``arrays`` (module inputs): JIT == interpreter."""
    b = rlx.Builder("f")
    inputs = [b.input(f"a{i}", a.shape, NAMES[a.dtype.type]) for i, a in enumerate(arrays)]
    b.ret(b.emit(op, *inputs, **attrs))
    assert_close(jit_compile(b.module)(*arrays), rlx.interpret(b.module, *arrays),
                 arrays[0].dtype.type)


def normal(rng, shape, dtype, scale=1.0, shift=0.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape) + shift).astype(dtype)


# ---------------------------------------------------------------- forward


@settings(max_examples=10, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_softmax_and_log_softmax_any_axis(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dtype = data.draw(st.sampled_from(DTYPES))
    x = normal(np.random.default_rng(len(shape)), shape, dtype, scale=3.0)
    check_op("softmax", x, axis=axis)
    check_op("log_softmax", x, axis=axis)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_stable_on_large_logits_and_minus_inf(dtype):
    x = np.array([[1000.0, 999.0, -np.inf], [-5.0, 80.0, 81.0]], dtype)
    check_op("softmax", x)
    check_op("log_softmax", x, axis=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,eps", [((7,), 1e-5), ((3, 8), 0.5), ((2, 3, 5), 1e-3)])
def test_layer_norm(shape, eps, dtype, rng):
    x = normal(rng, shape, dtype, 2.0, 1.0)
    gamma, beta = normal(rng, (2, shape[-1]), dtype)
    check_op("layer_norm", x, gamma, beta, eps=eps, axis=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,with_beta,eps", [((6,), False, 1e-6), ((3, 8), True, 0.25),
                                                 ((2, 3, 4), False, 1e-3)])
def test_rms_norm_with_and_without_beta(shape, with_beta, eps, dtype, rng):
    x = normal(rng, shape, dtype)
    params = normal(rng, (1 + with_beta, shape[-1]), dtype)
    check_op("rms_norm", x, *params, eps=eps)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,groups,eps", [((2, 6, 5), 3, 1e-5), ((1, 4, 3), 4, 0.5),
                                              ((2, 4, 3, 2), 1, 1e-5), ((2, 6, 2, 3), 2, 1e-2)])
def test_group_norm_rank_3_and_4(shape, groups, eps, dtype, rng):
    x = normal(rng, shape, dtype, 2.0, -1.0)
    gamma, beta = normal(rng, (2, shape[1]), dtype)
    check_op("group_norm", x, gamma, beta, num_groups=groups, eps=eps)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,eps", [((5,), 1e-5), ((2, 3, 4), 0.1)])
def test_batch_norm_inference(shape, eps, dtype, rng):
    x = normal(rng, shape, dtype)
    gamma, beta, mean = normal(rng, (3, shape[-1]), dtype)
    var = np.abs(normal(rng, shape[-1:], dtype))
    check_op("batch_norm_inference", x, gamma, beta, mean, var, eps=eps)


def labels_of(kind, classes: int) -> np.ndarray:
    """In-range, boundary, negative and (for floats) fractional and NaN labels."""
    if kind in (np.int32, np.int64):
        return np.array([0, classes - 1, classes, -1, 2, 1], kind)
    return np.array([0.5, classes - 0.01, classes, -0.5, -1.0, np.nan], kind)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("label_kind", [np.int32, np.int64, np.float32, np.float64])
def test_softmax_cross_entropy_and_backward(label_kind, dtype, rng):
    logits = normal(rng, (6, 5), dtype, 3.0)
    logits[1] += 90.0  # exp would overflow without the max shift
    labels = labels_of(label_kind, 5)
    check_op("softmax_cross_entropy", logits, labels)
    check_op("softmax_cross_entropy_backward", logits, labels, normal(rng, (6,), dtype))


@settings(max_examples=12, deadline=None)
@given(batch=st.sampled_from([(), (2,)]), seq=st.integers(1, 3), heads=st.integers(1, 3),
       half_dim=st.integers(1, 3), data=st.data())
def test_rope_and_backward(batch, seq, heads, half_dim, data):
    head_dim = 2 * half_dim
    n_rot = 2 * data.draw(st.integers(1, half_dim))
    dtype = data.draw(st.sampled_from(DTYPES))
    rng = np.random.default_rng(seq * 10 + heads)
    x = normal(rng, (*batch, seq, heads * head_dim), dtype)
    cos, sin = normal(rng, (2, seq, half_dim), dtype)
    op = data.draw(st.sampled_from(["rope", "rope_backward"]))
    attrs = {"head_dim": head_dim} if n_rot == head_dim and data.draw(st.booleans()) else {
        "head_dim": head_dim, "n_rot": n_rot}
    check_op(op, x, cos, sin, **attrs)


# ---------------------------------------------------------------- backward ops


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm,shape,eps", [("layer_norm", (3, 8), 1e-5),
                                            ("layer_norm", (2, 3, 5), 0.5),
                                            ("rms_norm", (6,), 1e-6),
                                            ("rms_norm", (2, 3, 4), 0.25)])
def test_row_norm_backward(norm, shape, eps, dtype, rng):
    x, dy = normal(rng, (2, *shape), dtype, 2.0, 0.5)
    gamma = normal(rng, shape[-1:], dtype)
    check_op(f"{norm}_backward_input", x, gamma, dy, eps=eps)
    check_op(f"{norm}_backward_gamma", x, dy, eps=eps, axis=-1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,groups,eps", [((2, 6, 5), 3, 1e-5), ((2, 4, 3, 2), 2, 0.5),
                                              ((1, 3, 2, 2), 1, 1e-5)])
def test_group_norm_backward(shape, groups, eps, dtype, rng):
    x, dy = normal(rng, (2, *shape), dtype, 2.0, -0.5)
    gamma = normal(rng, shape[1:2], dtype)
    check_op("group_norm_backward_input", x, gamma, dy, num_groups=groups, eps=eps)
    check_op("group_norm_backward_gamma", x, dy, num_groups=groups, eps=eps)
    check_op("group_norm_backward_beta", dy)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,eps", [((4,), 1e-5), ((2, 3, 4), 0.3)])
def test_batch_norm_inference_backward(shape, eps, dtype, rng):
    x, dy = normal(rng, (2, *shape), dtype)
    gamma, mean = normal(rng, (2, shape[-1]), dtype)
    var = np.abs(normal(rng, shape[-1:], dtype))
    check_op("batch_norm_inference_backward_input", gamma, var, dy, eps=eps)
    check_op("batch_norm_inference_backward_gamma", x, mean, var, dy, eps=eps)
    check_op("batch_norm_inference_backward_beta", dy)


# ---------------------------------------------------------------- whole gradient modules


def layer_norm_mlp(dtype: str):
    """``sum((gelu(layer_norm(x) @ w1) @ w2)^2)`` with x a parameter too."""
    b = rlx.Builder("f")
    x = b.param("x", (4, 8), dtype)
    gamma, beta = b.param("gamma", (8,), dtype), b.param("beta", (8,), dtype)
    w1, w2 = b.param("w1", (8, 16), dtype), b.param("w2", (16, 8), dtype)
    y = b.matmul(b.gelu(b.matmul(b.layer_norm(x, gamma, beta), w1)), w2)
    b.ret(b.reduce_sum(y * y, axes=[0, 1]))
    return b.module


def rms_rope_cross_entropy(dtype: str):
    """``sum(cross_entropy(reshape(rope(rms_norm(x))) @ w, labels))``."""
    b = rlx.Builder("f")
    x = b.param("x", (2, 3, 8), dtype)
    labels = b.input("labels", (6,), "i64")
    cos, sin = b.input("cos", (3, 2), dtype), b.input("sin", (3, 2), dtype)
    gamma, w = b.param("gamma", (8,), dtype), b.param("w", (8, 5), dtype)
    h = b.rope(b.rms_norm(x, gamma), cos, sin, head_dim=4)
    logits = b.matmul(b.reshape(h, (6, 8)), w)
    b.ret(b.reduce_sum(b.softmax_cross_entropy(logits, labels), axes=[0]))
    return b.module


def random_args(signature, rng) -> list[np.ndarray]:
    """Random arrays for a function's arguments (labels in [-1, 5], one out of range)."""
    args = []
    for arg in signature.args:
        if arg.dtype.kind == "i":
            args.append(rng.integers(-1, 6, arg.shape).astype(arg.dtype))
        else:
            args.append(rng.standard_normal(arg.shape).astype(arg.dtype))
    return args


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("build", [layer_norm_mlp, rms_rope_cross_entropy])
def test_gradient_module_jit_matches_interpreter(build, dtype, rng):
    module = build(NAMES[dtype])
    rlx.grad_with_loss(module)
    compiled = jit_compile(module, entry="f_grad")
    args = random_args(compiled.signature, rng)
    got = compiled(*args)
    want = rlx.interpret(module, *args, entry="f_grad")
    assert len(got) == 1 + len([a for a in compiled.signature.args if a.is_param])
    assert_close(got, want, dtype)
