"""The tracing front end on unusual input: vmap's in_axes, grad's argnums and scalar
output, integer-array indexing and non-tensor outputs (numbers against numpy, errors
as RlxError)."""

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir import RlxError

RNG = np.random.default_rng(7)


def raises_at_call(match, call):
    """``call()`` raises an :class:`RlxError` matching ``match`` located at the line of
    this file where ``call`` (a one-line lambda) is written: the user's call site."""
    with pytest.raises(RlxError, match=match) as e:
        call()
    assert str(e.value).startswith(f"{__file__}:{call.__code__.co_firstlineno}:"), str(e.value)
    return e.value


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------- vmap in_axes


def test_vmap_in_axes_one_matches_numpy():
    a, b = rand(4, 4), rand(4, 4)
    got = rlx.vmap(lambda u, v: (u * v).sum(), in_axes=(1, 0))(a, b)
    np.testing.assert_allclose(got, (a.T * b).sum(1), rtol=1e-5)


@pytest.mark.parametrize("axes", [(1, None), (-1, None), (2, 0), (-2, -1), (0, 1)])
def test_vmap_3d_argument_on_any_axis(axes):
    x = rand(3, 5, 4)                      # batch of 3, 5 or 4 examples
    n = x.shape[axes[0]]
    w = {None: rand(2, 6), 0: rand(n, 2, 6), 1: rand(2, n, 6), -1: rand(2, 6, n)}[axes[1]]

    def per_example(x, w):                 # not symmetric in x's axes or w's
        return (x * x).sum(axis=1).max() * (w[0] - 2.0 * w[1]).sum()

    got = rlx.vmap(per_example, in_axes=axes)(x, w)
    xs = np.moveaxis(x, axes[0], 0)
    ws = [w] * n if axes[1] is None else np.moveaxis(w, axes[1], 0)
    want = [(xs[i] ** 2).sum(1).max() * (ws[i][0] - 2 * ws[i][1]).sum() for i in range(n)]
    np.testing.assert_allclose(got, want, rtol=1e-4)


def test_vmap_axis_moves_before_a_matmul():
    x, w = rand(3, 8, 5), rand(5, 2)          # examples x[:, i, :] of shape (3, 5)
    got = rlx.vmap(lambda x, w: x @ w, in_axes=(1, None))(x, w)
    np.testing.assert_allclose(got, np.einsum("aib,bc->iac", x, w), rtol=1e-5)


def test_vmap_int_in_axes_applies_to_every_argument_and_pytree_leaf():
    p = {"a": rand(2, 6), "b": rand(3, 6)}
    got = rlx.vmap(lambda p: p["a"].sum() - p["b"].max(), in_axes=-1)(p)
    np.testing.assert_allclose(got, p["a"].sum(0) - p["b"].max(0), rtol=1e-5)


def test_vmap_in_axes_inside_jit_and_of_grad():
    x, w = rand(3, 6), rand(3)
    got = rlx.jit(lambda x, w: rlx.vmap(lambda r, w: (r * w).sum(), in_axes=(1, None))(x, w))(x, w)
    np.testing.assert_allclose(got, w @ x, rtol=1e-5)

    grads = rlx.vmap(rlx.grad(lambda w, r: ((r * w).sum()) ** 2), in_axes=(None, -1))(w, x)
    want = np.stack([2 * (x[:, i] @ w) * x[:, i] for i in range(6)])
    np.testing.assert_allclose(grads, want, rtol=1e-4)


@pytest.mark.parametrize("in_axes, message", [
    (False, r"in_axes entries must be ints or None; got False"),
    ((True, None), r"in_axes entries must be ints or None; got True"),
    ((0, 1.0), r"got 1.0"),
    ("0", r"got '0'"),
])
def test_vmap_rejects_non_int_in_axes(in_axes, message):
    with pytest.raises(RlxError, match=message):
        rlx.vmap(lambda u, v: u + v, in_axes=in_axes)


def test_vmap_in_axes_length_must_match_the_arguments():
    f = lambda p, x: (x @ p).sum()  # noqa: E731
    p, x = np.ones((3, 2), np.float32), np.ones((8, 4, 3), np.float32)
    with pytest.raises(RlxError, match="in_axes has 3 entries but the function got 2 arguments"):
        rlx.vmap(f, in_axes=(None, 0, 0))(p, x)
    with pytest.raises(RlxError, match="in_axes has 1 entries but the function got 2 arguments"):
        rlx.vmap(f, in_axes=(0,))(p, x)


def test_vmap_axis_out_of_rank_and_0d_arguments():
    with pytest.raises(RlxError, match="argument 0 is 0-d and cannot be batched along axis 0"):
        rlx.vmap(lambda s: s * 2.0)(np.float32(3))
    with pytest.raises(RlxError, match="in_axes entry 2 is out of range for argument 1 of rank 2"):
        rlx.vmap(lambda u, v: u + v, in_axes=(0, 2))(rand(4), rand(3, 4))
    with pytest.raises(RlxError, match=r"in_axes entry -3 is out of range for argument 0 \(leaf b\)"):
        rlx.vmap(lambda p: p["b"].sum(), in_axes=-3)({"b": rand(3, 4)})


def test_vmap_nothing_batched_and_batch_size_mismatch():
    f = lambda u, v: (u * v).sum()  # noqa: E731
    with pytest.raises(RlxError, match=r"no argument is batched \(every in_axes entry is None\)"):
        rlx.vmap(f, in_axes=(None, None))(rand(4), rand(4))
    with pytest.raises(RlxError, match="disagree on the batch size: argument 0 has 4, "
                                       "argument 1 has 8"):
        rlx.vmap(f)(rand(4, 3), rand(8, 3))
    with pytest.raises(RlxError, match="argument 0 has 3, argument 1 has 4"):
        rlx.vmap(f, in_axes=(1, 0))(rand(4, 3), rand(4, 4))


# ---------------------------------------------------------------- grad


@pytest.mark.parametrize("transform", [rlx.grad, rlx.value_and_grad])
@pytest.mark.parametrize("fn, shape", [(lambda a: a * 2.0, r"\(2, 3\)"),
                                       (lambda a: a.sum(axis=0, keepdims=True)[:, 0], r"\(1,\)")])
def test_grad_requires_a_scalar_output(transform, fn, shape):
    name = transform.__name__
    raises_at_call(rf"{name} requires a scalar \(0-d\) output; got shape {shape}",
                   lambda: transform(fn)(np.ones((2, 3), np.float32)))


def test_grad_requires_a_single_output():
    with pytest.raises(RlxError, match="grad requires a function returning one scalar"):
        rlx.grad(lambda a: (a.sum(), a.max()))(rand(3))


def test_grad_argnums_out_of_range_or_not_int():
    x = rand(4, 3)
    with pytest.raises(RlxError, match="grad: argnums 5 is out of range for a function called "
                                       "with 1 positional argument"):
        rlx.grad(lambda a: a.sum(), argnums=5)(x)
    with pytest.raises(RlxError, match="value_and_grad: argnums -3 is out of range .* with 2 "):
        rlx.value_and_grad(lambda a, b: (a * b).sum(), argnums=(0, -3))(x, x)
    for bad in (True, "0", (), (0, 1.0)):
        with pytest.raises(RlxError, match="argnums must be an int or a non-empty tuple of ints"):
            rlx.grad(lambda a: a.sum(), argnums=bad)


def test_grad_argnums_order_negative_and_repeated():
    a, b = rand(3), rand(3)
    f = lambda x, y: (x * x * y).sum()  # noqa: E731
    ga, gb = 2 * a * b, a * a
    g = rlx.grad(f, argnums=(1, 0))(a, b)
    assert isinstance(g, tuple)
    np.testing.assert_allclose(g[0], gb, rtol=1e-6)
    np.testing.assert_allclose(g[1], ga, rtol=1e-6)
    np.testing.assert_allclose(rlx.grad(f, argnums=-1)(a, b), gb, rtol=1e-6)
    g0, g1 = rlx.grad(f, argnums=(0, 0))(a, b)
    np.testing.assert_allclose(g0, ga, rtol=1e-6)
    np.testing.assert_allclose(g1, ga, rtol=1e-6)


# ---------------------------------------------------------------- indexing and outputs


def test_index_with_a_numpy_integer_array_gathers_rows():
    x = rand(4, 3)
    got = rlx.jit(lambda a: a[np.array([2, 0, -1])])(x)
    np.testing.assert_array_equal(got, x[np.array([2, 0, -1])])
    got = rlx.jit(lambda a: a[np.array([[1, 1], [3, 0]], np.int64)])(x)
    np.testing.assert_array_equal(got, x[np.array([[1, 1], [3, 0]])])
    g = rlx.grad(lambda a: (a[np.array([1, 1, 3])] * 2.0).sum())(x)
    np.testing.assert_allclose(g, np.array([0, 4, 0, 2], np.float32)[:, None] * np.ones(3))


def test_index_with_numpy_integer_scalars():
    x = rand(4, 3)
    got = rlx.jit(lambda a: a[np.int64(2), np.array(1)])(x)
    np.testing.assert_allclose(got, x[2, 1])


@pytest.mark.parametrize("index, message", [
    (np.array([1, 4]), "index 4 is out of range for axis 0 of size 4"),
    (np.array([True, False, True, True]), "boolean-mask indexing is not supported"),
    (np.array([0.0, 1.0]), "index arrays must have an integer dtype, got float64"),
    ((0, slice(None), np.array([0, 1])), "an index array apart from other integer indices"),
    ((np.array([0, 1]), np.array([0, 1])), "only one index array"),
    ((slice(None), np.array([0, 3])), "index 3 is out of range for axis 1 of size 3"),
    ((slice(None), slice(None), slice(None), 0), "too many indices for a tensor of rank 3"),
    ([2, 0], r"indexing with a list is not supported .* x\[np.array"),
    (True, "boolean index True is not supported"),
    ((Ellipsis, 0, Ellipsis), "single ellipsis"),
])
def test_bad_indices_are_rlx_errors(index, message):
    with pytest.raises(RlxError, match=message):
        rlx.jit(lambda a: a[index])(rand(4, 3, 2))


def test_non_tensor_outputs_are_named():
    x = rand(3)
    a, none = rlx.jit(lambda a: (a, None))(x)  # None is an empty subtree, as in JAX
    np.testing.assert_allclose(a, x)
    assert none is None and rlx.jit(lambda a: None)(x) is None
    with pytest.raises(RlxError, match=r"returned a str at output \[0\]\.y; outputs must be"):
        rlx.jit(lambda a: [{"y": "no"}])(x)
    with pytest.raises(RlxError, match="returned an object at the output"):
        rlx.jit(lambda a: object())(x)
    a, c = rlx.jit(lambda a: (a * 2.0, np.float32(3)))(x)
    np.testing.assert_allclose(a, 2 * x)
    assert float(c) == 3.0


# ---------------------------------------------------------------- located errors


X = np.ones((2, 3), np.float32)


def test_wrong_argument_count_is_a_located_error():
    w = np.ones((3, 2), np.float32)
    raises_at_call(r"cannot call <lambda> with 1 argument: missing a required argument: 'x'",
                   lambda: rlx.jit(lambda w, x: (x @ w).sum())(w))
    raises_at_call("cannot call <lambda> with 2 arguments: too many positional arguments",
                   lambda: rlx.jit(lambda w: w.sum())(w, w))
    raises_at_call("cannot call <lambda> with 2 arguments",
                   lambda: rlx.grad(lambda w: w.sum())(w, w))
    raises_at_call("cannot call <lambda> with 0 arguments",
                   lambda: rlx.vmap(lambda w: w.sum())())
    raises_at_call("cannot call <lambda> with 2 arguments",
                   lambda: rlx.jvp(lambda w: w, (w, w), (w, w)))
    raises_at_call("cannot call <lambda> with 2 arguments: missing a required argument: 'x'",
                   lambda: rlx.jit(lambda w, s, x: w * x, static_argnums=1)(w, True))
    raises_at_call("cannot call <lambda>: got an unexpected keyword argument 'b'",
                   lambda: rlx.jit(lambda a: a)(X, b=1))


@pytest.mark.parametrize("transform", [rlx.jit, rlx.grad, rlx.value_and_grad, rlx.vmap])
def test_transforming_a_non_callable_fails_when_made(transform):
    raises_at_call(rf"{transform.__name__}: the function to transform must be callable; "
                   "got int 3", lambda: transform(3))


def test_jvp_of_a_non_callable_and_parse_of_a_non_string():
    raises_at_call("jvp: the function to transform must be callable; got str",
                   lambda: rlx.jvp("f", (X,), (X,)))
    raises_at_call("parse: expected the module's text as a str; got int",
                   lambda: rlx.parse(3))


@pytest.mark.parametrize("arg, message", [
    (np.ones(2, np.uint8), "unsupported argument dtype uint8 at \\[0\\]"),
    (np.ones(2, np.uint8), "unsupported argument dtype uint8"),
    ("ab", r"unsupported argument dtype <U2 \(a str\)"),
])
def test_unsupported_argument_dtypes_are_located(arg, message):
    raises_at_call(message, lambda: rlx.jit(lambda a: a)(arg))


def test_vmap_grad_and_jvp_call_errors_are_located():
    raises_at_call("vmap: in_axes entry 3 is out of range for argument 0 of rank 2",
                   lambda: rlx.vmap(lambda a: a, in_axes=3)(X))
    raises_at_call("vmap: no argument is batched",
                   lambda: rlx.vmap(lambda a: a, in_axes=None)(X))
    raises_at_call("vmap: batched arguments disagree on the batch size",
                   lambda: rlx.vmap(lambda a, b: a + b)(X, np.ones((3, 3), np.float32)))
    raises_at_call("jvp: the tangent at \\[0\\] is f32\\[3\\] but its primal is f32\\[2, 3\\]",
                   lambda: rlx.jvp(lambda a: a, (X,), (np.ones(3, np.float32),)))
    raises_at_call("grad: argnums 5 is out of range",
                   lambda: rlx.grad(lambda a: a.sum(), argnums=5)(X))
    raises_at_call(r"grad requires a scalar \(0-d\) output; got shape \(2, 3\)",
                   lambda: rlx.jit(lambda a: rlx.grad(lambda b: b * 2.0)(a))(X))


def test_tensor_misuse_is_a_located_error():
    raises_at_call("tensors are immutable: `x\\[i\\] = v` cannot be traced.*rlx.nn.where",
                   lambda: rlx.jit(lambda a: a.__setitem__(0, 1.0))(X))
    raises_at_call("boolean-mask indexing is not supported while tracing.*rlx.nn.where",
                   lambda: rlx.jit(lambda a: a[a > 0])(X))
    raises_at_call("index tensors must have an integer dtype, got f32",
                   lambda: rlx.jit(lambda a: a[a[0]])(X))
    raises_at_call("sum: out= is not supported",
                   lambda: rlx.jit(lambda a: np.sum(a, out=np.zeros(())))(X))
    raises_at_call("sum: unsupported keyword argument initial",
                   lambda: rlx.jit(lambda a: np.sum(a, initial=1.0))(X))
    raises_at_call("cannot combine a tensor with str 'a'",
                   lambda: rlx.jit(lambda a: a + "a")(X))
    raises_at_call("// and % are not defined for complex tensors",
                   lambda: rlx.jit(lambda a: a % a)(np.ones(2, np.complex64)))


def test_a_list_operand_of_an_nn_function_is_a_located_error():
    raises_at_call(r"expected a tensor or numpy array operand, got list \[1.0\] \(convert it",
                   lambda: rlx.jit(lambda a: rlx.nn.concat([a, [1.0]]))(np.ones(3, np.float32)))


# ---------------------------------------------------------------- constants and dtypes


X2 = np.array([1.0, 2.0], np.float32)


@pytest.mark.parametrize("fn,numpy_fn", [
    (lambda a: a * (1 + 2j), lambda a: a * (1 + 2j)),
    (lambda a: a * np.complex64(1j), lambda a: a * np.complex64(1j)),
    (lambda a: a + np.array([1j, 2j]), lambda a: a + np.array([1j, 2j])),
    (lambda a: rlx.nn.where(a > 1, a, 1j), lambda a: np.where(a > 1, a, 1j))])
def test_a_complex_constant_with_a_real_tensor_makes_it_complex(fn, numpy_fn):
    """As numpy (the result is c64, JAX's width for a Python complex): cast to f32 the
    constant lost its imaginary part silently (``a * (1+2j)`` gave ``a``)."""
    got = rlx.jit(fn)(X2)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got, numpy_fn(X2), rtol=1e-6)


def test_a_complex_array_in_a_real_concat_is_an_error_not_its_real_part():
    raises_at_call("complex constant .* imaginary part would be lost",
                   lambda: rlx.jit(lambda a: rlx.nn.concat([a, np.array([1j])]))(X2))


@pytest.mark.parametrize("name", ["flaot32", "int33"])
def test_astype_of_an_unknown_dtype_name_is_an_error(name):
    """It cast to f64 (numpy's dtype of None)."""
    raises_at_call(f"unsupported dtype '{name}'", lambda: rlx.jit(lambda a: a.astype(name))(X2))


def test_nn_on_a_list_says_to_pass_an_array():
    raises_at_call(r"at least one tensor operand .*got list .*np\.asarray",
                   lambda: rlx.nn.softmax([1.0, 2.0]))


def test_grad_of_an_integer_leaf_is_located_at_the_call():
    """The IR transformation's error gets the user's line (it had none)."""
    raises_at_call("cannot differentiate with respect to 'p.n'",
                   lambda: rlx.grad(lambda p: p["a"].sum())({"a": X2, "n": np.int32(3)}))
