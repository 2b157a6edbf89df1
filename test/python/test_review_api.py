"""Probes from a review that ported JAX and PyTorch programs to rlx (a CNN, a GRU through
scan, a ViT block, a VAE with per-example gradients): the conveniences JAX users reach
for, each checked against numpy, JAX or torch, and the clear errors where rlx differs."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import torch

import rlx_mlir as rlx
from rlx_mlir import RlxError

RNG = np.random.default_rng(5)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_argmax_and_argmin_match_jax_with_ties_and_nan(axis, keepdims, kind):
    x = RNG.integers(0, 3, (3, 4, 5)).astype(np.float32)  # many ties: the first index wins
    x[0, 0, 2] = np.nan
    got = rlx.jit(lambda a: getattr(a, kind)(axis=axis, keepdims=keepdims))(x)
    want = np.asarray(getattr(jnp, kind)(x, axis=axis, keepdims=keepdims))
    assert got.dtype == np.int32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(rlx.jit(lambda a: getattr(rlx.nn, kind)(a, axis))(x),
                                  getattr(jnp, kind)(x, axis))


def test_strided_and_reversed_slices_and_their_gradient():
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    for f in (lambda a: a[::2], lambda a: a[:, ::-1], lambda a: a[1::2, 5:0:-2]):
        np.testing.assert_array_equal(rlx.jit(f)(x), f(x))
    weights = np.arange(6, dtype=np.float32)
    g = rlx.grad(lambda a: (a[::2, ::-1] * weights).sum())(x)
    want = np.zeros_like(x)
    want[::2] = weights[::-1]
    np.testing.assert_array_equal(g, want)


def test_an_empty_slice_is_a_clear_error():
    with pytest.raises(RlxError, match=r"the slice 3:1 of axis 0 \(size 4\) is empty"):
        rlx.jit(lambda a: a[3:1])(rand(4, 3))


@pytest.mark.parametrize("padding, kw", [("same", {}), ("valid", {}), ("same", {"dilation": 2}),
                                         ("SAME", {"stride": 2})])
def test_conv2d_named_padding_matches_torch_and_jax(padding, kw):
    x, w = rand(2, 3, 9, 9), rand(4, 3, 3, 3)
    got = rlx.jit(lambda a: rlx.nn.conv2d(a, w, padding=padding, **kw))(x)
    if kw.get("stride", 1) == 1:
        want = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w),
                                          padding=padding.lower(), **kw).numpy()
    else:  # torch has no "same" with a stride: JAX's SAME
        import jax

        want = np.asarray(jax.lax.conv_general_dilated(x, w, (2, 2), "SAME"))
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel, stride, size", [(2, 1, 9), (4, 1, 8), (4, 2, 10)])
def test_conv2d_same_padding_with_an_odd_total_puts_the_extra_row_after(kernel, stride,
                                                                        size):
    """Even kernels (and strides) whose 'same' padding is odd: the extra row and column go
    after, as in PyTorch and JAX; values and both gradients against JAX's SAME."""
    import jax

    x, w = rand(2, 3, size, size), rand(4, 3, kernel, kernel)

    def ours(a, b):
        return rlx.nn.conv2d(a, b, stride=stride, padding="same")

    def theirs(a, b):
        return jax.lax.conv_general_dilated(a, b, (stride, stride), "SAME")

    np.testing.assert_allclose(rlx.jit(ours)(x, w), np.asarray(theirs(x, w)), rtol=1e-4,
                               atol=1e-4)
    grads = rlx.grad(lambda a, b: (ours(a, b) ** 2).sum(), argnums=(0, 1))(x, w)
    want = jax.grad(lambda a, b: (theirs(a, b) ** 2).sum(), argnums=(0, 1))(x, w)
    for got, ref in zip(grads, want, strict=True):
        np.testing.assert_allclose(got, np.asarray(ref), rtol=1e-4, atol=1e-3)
    if stride == 1:
        np.testing.assert_allclose(rlx.jit(ours)(x, w), torch.nn.functional.conv2d(
            torch.tensor(x), torch.tensor(w), padding="same").numpy(), rtol=1e-4, atol=1e-4)


def test_numpy_parameters_of_nn_ops_take_the_input_dtype():
    """f64 numpy gamma / beta / weights next to an f32 input, as ``x + array`` does."""
    x = rand(4, 3)
    got = rlx.jit(lambda a: rlx.nn.layer_norm(a, np.ones(3), np.zeros(3)))(x)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-5, atol=1e-5)
    assert rlx.jit(lambda a: rlx.nn.rms_norm(a, np.ones(3)))(x).dtype == np.float32
    # a numpy x with traced beta: the numpy operands become constants as they are
    beta = np.zeros(3, np.float32)
    got = rlx.jit(lambda b: rlx.nn.layer_norm(x, np.ones(3, np.float32), b))(beta)
    np.testing.assert_allclose(got, (x - mean) / np.sqrt(var + 1e-5), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a, b, dtype", [(np.int32(1), np.int64(2), np.int64),
                                         (np.int64(3), np.int32(2), np.int64)])
def test_mixed_integer_dtypes_widen_as_in_numpy(a, b, dtype):
    got = rlx.jit(lambda i, j: (i + j, i * (j > 0), (i > 0) + j))(a, b)
    want = (a + b, a * (b > 0), (a > 0) + b)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w)
    assert got[0].dtype == dtype


def test_jit_static_argnames():
    f = rlx.jit(lambda a, n: a * n, static_argnames="n")
    np.testing.assert_array_equal(f(np.ones(2, np.float32), 3), [3, 3])
    np.testing.assert_array_equal(f(np.ones(2, np.float32), n=4), [4, 4])
    with pytest.raises(RlxError, match=r"static_argnames \['m'\] are not parameters"):
        rlx.jit(lambda a, n: a * n, static_argnames=("m",))


def test_cond_with_an_integer_predicate_is_pred_not_zero():
    x = rand(3)
    f = rlx.jit(lambda a, i: rlx.cond(i, lambda: a, lambda: -a))
    np.testing.assert_array_equal(f(x, np.int32(2)), x)
    np.testing.assert_array_equal(f(x, np.int32(0)), -x)


def test_attention_mask_without_a_kind_takes_it_from_its_rank():
    q = rand(2, 4, 8)
    keep = np.array([[True, True, False, True], [True, False, True, True]])
    bias = np.where(np.broadcast_to(keep[:, None, None, :], (2, 2, 4, 4)), 0.0,
                    -1e9).astype(np.float32)
    padded = rlx.jit(lambda q: rlx.nn.attention(q, q, q, 2, mask=keep))(q)
    custom = rlx.jit(lambda q: rlx.nn.attention(q, q, q, 2, mask=keep, mask_kind="custom"))(q)
    biased = rlx.jit(lambda q: rlx.nn.attention(q, q, q, 2, mask=bias))(q)
    np.testing.assert_array_equal(padded, custom)
    np.testing.assert_allclose(biased, custom, rtol=1e-5, atol=1e-6)
    with pytest.raises(RlxError, match="a mask of rank 3 needs a mask_kind"):
        rlx.jit(lambda q: rlx.nn.attention(q, q, q, 2, mask=bias[0]))(q)


def test_grad_of_a_fori_loop_with_traced_bounds_names_the_fix():
    with pytest.raises(RlxError, match="fori_loop with Python int bounds"):
        rlx.grad(lambda w, n: rlx.fori_loop(0, n, lambda i, c: c * w, w))(np.float32(2),
                                                                          np.int32(3))


@pytest.mark.parametrize("name, fn", [
    ("x[:, i]", lambda a, i: a[:, i]),
    ("x[i, :, 1:3]", lambda a, i: a[i, :, 1:3]),
    ("x[..., i]", lambda a, i: a[..., i]),
    ("x[i, i]", lambda a, i: a[i, i]),
    ("x[:, idx2d]", lambda a, i: a[:, np.array([[3, 0], [1, -1]])]),
    ("x[1, idx2d]", lambda a, i: a[1, np.array([[3, 0], [1, -1]])]),
    ("x[None, :, -1, idx]", lambda a, i: a[None, :, -1, np.array([4, 0])]),
    ("x[:, 1:3, ::2]", lambda a, i: a[:, 1:3, ::2]),
])
def test_indexing_with_traced_scalars_and_index_arrays_at_any_axis_matches_jax(name, fn):
    """A traced integer scalar drops its axis (as an int), an index array replaces its
    axis by the array's dims (numpy's rule for one array index): rlx.gather, differentiable."""
    x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    i = np.int32(2)
    got = rlx.jit(fn)(x, i)
    want = np.asarray(fn(jnp.asarray(x), jnp.asarray(i)))
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    g = rlx.grad(lambda a, i: (fn(a, i) ** 2).sum())(x, i)
    import jax

    np.testing.assert_allclose(g, jax.grad(lambda a: (fn(a, i) ** 2).sum())(jnp.asarray(x)),
                               rtol=1e-6)


def test_nn_functions_run_eagerly_on_numpy_arrays_outside_a_trace():
    """As jax.nn outside jit: the call is traced alone and run by the interpreter; the
    same numbers as inside a trace (other numpy arguments enter as they would there)."""
    x = rand(2, 5)
    labels = np.array([1, 4])
    cases = {
        "softmax": (lambda: rlx.nn.softmax(x), lambda a: rlx.nn.softmax(a)),
        "where": (lambda: rlx.nn.where(x > 0, x, 0.0), lambda a: rlx.nn.where(a > 0, a, 0.0)),
        "layer_norm": (lambda: rlx.nn.layer_norm(x, np.ones(5), np.zeros(5)),
                       lambda a: rlx.nn.layer_norm(a, np.ones(5), np.zeros(5))),
        "cross_entropy": (lambda: rlx.nn.cross_entropy(x, labels),
                          lambda a: rlx.nn.cross_entropy(a, labels)),
        "concat": (lambda: rlx.nn.concat([x, x], axis=0), lambda a: rlx.nn.concat([a, a])),
        "argmax": (lambda: rlx.nn.argmax(x, axis=1), lambda a: rlx.nn.argmax(a, axis=1)),
    }
    for name, (eager, traced) in cases.items():
        got, want = eager(), rlx.jit(traced)(x)
        assert isinstance(got, np.ndarray), name
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    assert float(rlx.nn.relu(-3.0)) == 0.0 and rlx.nn.sigmoid(0.0).dtype == np.float32


def test_numpy_dtype_names_work_wherever_dtypes_are_taken():
    """``astype`` took ``"float32"`` but ``one_hot``, ``dequantize`` and ``Builder.input``
    refused it."""
    ids = np.array([1, 2], np.int32)
    for dtype in ("float32", np.float32, "f32"):
        got = rlx.jit(lambda i, dtype=dtype: rlx.nn.one_hot(i, 4, dtype=dtype))(ids)
        assert got.dtype == np.float32
    assert rlx.quant.dequantize(np.array([1, 2], np.int8), 0.5, dtype=np.float64).dtype == np.float64
    assert rlx.Builder("f").input("x", (3,), "float32").dtype == "f32"
    with pytest.raises(rlx.RlxError, match="one_hot: dtype must be"):
        rlx.nn.one_hot(ids, 4, dtype="int32")
