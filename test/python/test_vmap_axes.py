"""rlx.vmap's out_axes (int, negative, None, pytree prefixes) and pytree-prefix in_axes
against jax.vmap (float32, natively compiled and inside rlx.jit), and their errors."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir import RlxError

jnp = jax.numpy
RNG = np.random.default_rng(11)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def close(got, want):
    """Same pytree structure (tuples and lists alike, as rlx returns tuples), shapes and
    values (float32 tolerances)."""
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree.num_leaves == want_tree.num_leaves, (got_tree, want_tree)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, np.asarray(w), rtol=2e-5, atol=2e-5)


def raises_at_call(match, call):
    """``call()`` raises an RlxError matching ``match``, located at ``call``'s line."""
    with pytest.raises(RlxError, match=match) as e:
        call()
    assert str(e.value).startswith(f"{__file__}:{call.__code__.co_firstlineno}:"), str(e.value)


def both(make_fn, *args, jit=False, **axes):
    """``(rlx, jax)`` results of ``vmap(make_fn(lib), **axes)(*args)`` (``lib`` is rlx.nn or
    jax.numpy); with ``jit``, rlx's vmap is called inside rlx.jit."""
    ours = rlx.vmap(make_fn(rlx.nn), **axes)
    if jit:
        ours = rlx.jit(ours)
    return ours(*args), jax.vmap(make_fn(jnp), **axes)(*args)


# ---------------------------------------------------------------- out_axes


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
@pytest.mark.parametrize("out_axes", [0, 1, 2, -1, -2, -3])
def test_int_out_axes_match_jax(out_axes, jit):
    x, w = rand(5, 3, 4), rand(4, 2)
    got, want = both(lambda lib: lambda x, w: lib.tanh(x @ w), x, w, jit=jit,
                     in_axes=(0, None), out_axes=out_axes)
    close(got, want)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_out_axes_none_for_outputs_that_do_not_depend_on_the_batch(jit):
    x, w = rand(6, 3), rand(3)

    def f(lib):
        return lambda x, w: (x * w, lib.tanh(w) * 2.0, np.float32(7.0))

    got, want = both(f, x, w, jit=jit, in_axes=(0, None), out_axes=(1, None, None))
    close(got, want)
    assert np.shape(got[1]) == (3,)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_vmap_of_a_function_returning_a_dict(jit):
    x, w = rand(4, 3), rand(3, 2)

    def f(lib):
        return lambda x, w: {"y": lib.tanh(x @ w), "n": (x * x).sum(), "w": w.sum(axis=0)}

    got, want = both(f, x, w, jit=jit, in_axes=(0, None))
    assert sorted(got) == ["n", "w", "y"]
    close(got, want)
    got, want = both(f, x, w, jit=jit, in_axes=(0, None), out_axes={"y": -1, "n": 0, "w": None})
    close(got, want)


def test_nested_out_axes_prefix_of_a_nested_output():
    x = rand(3, 2, 5)

    def f(lib):
        return lambda x: ((x * 2.0, {"a": lib.tanh(x), "b": x.sum(axis=0)}), [x - 1.0])

    for out_axes in [((1, {"a": -1, "b": 0}), [2]), (1, [0]), ((-1, 1), -2)]:
        got, want = both(f, x, out_axes=out_axes)
        close(got, want)


def test_nested_vmaps_with_out_axes_match_jax():
    x = rand(3, 4, 5)

    def f(lib, vmap):
        return lambda x: vmap(lambda r: lib.tanh(r) * r.sum(), out_axes=-1)(x)

    close(rlx.vmap(f(rlx.nn, rlx.vmap), in_axes=1, out_axes=1)(x),
          jax.vmap(f(jnp, jax.vmap), in_axes=1, out_axes=1)(x))


def test_out_axes_moves_the_batch_of_a_vmapped_grad():
    p = {"w": rand(3, 2), "b": rand(2)}
    xs = rand(5, 3)

    def loss(lib):
        return lambda p, x: (lib.tanh(x @ p["w"] + p["b"]) ** 2).sum()

    ours = rlx.vmap(rlx.grad(loss(rlx.nn)), in_axes=(None, 0), out_axes={"w": 2, "b": 1})
    theirs = jax.vmap(jax.grad(loss(jnp)), in_axes=(None, 0), out_axes={"w": 2, "b": 1})
    close(ours(p, xs), theirs(p, xs))
    close(rlx.jit(ours)(p, xs), theirs(p, xs))


# ---------------------------------------------------------------- pytree in_axes


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_dict_prefix_in_axes_batch_some_leaves(jit):
    p = {"w": rand(3, 2), "b": rand(5, 2)}            # b batched on 0, w shared
    x = rand(3, 5)                                     # batched on axis 1

    def f(lib):
        return lambda p, x: lib.tanh(x @ p["w"] + p["b"])

    got, want = both(f, p, x, jit=jit, in_axes=({"w": None, "b": 0}, 1))
    close(got, want)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_nested_tuple_list_and_dict_prefixes(jit):
    layers = [{"w": rand(3, 3), "s": rand(3, 4)}, {"w": rand(4, 3, 3), "s": rand(3)}]
    pair = (rand(4, 3), rand(3))

    def f(lib):
        def net(layers, pair):
            h = pair[0] * pair[1]
            for layer in layers:
                h = lib.tanh(h @ layer["w"]) * layer["s"]
            return h
        return net

    in_axes = ([{"w": None, "s": 1}, {"w": 0, "s": None}], (0, None))
    got, want = both(f, layers, pair, jit=jit, in_axes=in_axes)
    close(got, want)


def test_int_entry_covers_a_whole_subtree_with_negative_axes():
    p = {"a": rand(2, 5), "b": (rand(3, 5), rand(5))}
    got, want = both(lambda lib: lambda p, s: p["a"].sum() * s + p["b"][0].max() - p["b"][1],
                     p, rand(5), in_axes=({"a": -1, "b": -1}, 0))
    close(got, want)


def test_top_level_list_in_axes_is_a_tuple():
    x, w = rand(4, 3), rand(3)
    got, want = both(lambda lib: lambda x, w: x * w, x, w, in_axes=[0, None])
    close(got, want)


# ---------------------------------------------------------------- errors


def test_out_axes_none_on_a_batched_output_is_an_error():
    x = rand(4, 3)
    raises_at_call("vmap: out_axes is None for the output, but it depends on a batched "
                   "argument", lambda: rlx.vmap(lambda a: a * 2.0, out_axes=None)(x))
    raises_at_call("out_axes is None for output b, but it depends on a batched argument",
                   lambda: rlx.vmap(lambda a, w: {"a": w, "b": a * w}, in_axes=(0, None),
                                    out_axes={"a": None, "b": None})(x, x[0]))
    raises_at_call(r"out_axes is None for output \[0\]",
                   lambda: rlx.jit(lambda a: rlx.vmap(lambda r: (r, 1.0), out_axes=None)(a))(x))


@pytest.mark.parametrize(("in_axes", "message"), [
    (({"w": None}, 0), r"the in_axes entry \{'w': None\} for argument 0 does not match its "
                       r"structure: argument 0 is a dict with keys 'b', 'w'"),
    (({"w": None, "b": 0, "c": 0}, 0), "argument 0 is a dict with keys 'b', 'w'"),
    (((0, None), 0), r"the in_axes entry \(0, None\) for argument 0 does not match"),
    ((None, {"x": 0}), "argument 1 is an array"),
    (({"w": (0, 0), "b": 0}, 0), r"for argument 0\['w'\] does not match its structure"),
])
def test_mismatched_in_axes_prefixes_are_errors(in_axes, message):
    p, x = {"w": rand(3), "b": rand(4, 3)}, rand(4, 3)
    with pytest.raises(RlxError, match=message):
        rlx.vmap(lambda p, x: p["w"] * x + p["b"], in_axes=in_axes)(p, x)


def test_mismatched_out_axes_prefixes_are_errors():
    x = rand(4, 3)
    raises_at_call(r"the out_axes entry \(0, 0, 0\) for the output does not match its "
                   "structure: the output is a tuple of 2",
                   lambda: rlx.vmap(lambda a: (a, a), out_axes=(0, 0, 0))(x))
    raises_at_call(r"the out_axes entry \{'b': 0\} for the output does not match",
                   lambda: rlx.vmap(lambda a: {"a": a}, out_axes={"b": 0})(x))
    raises_at_call(r"the out_axes entry \[0\] for the output does not match its structure: "
                   "the output is an array", lambda: rlx.vmap(lambda a: a, out_axes=[0])(x))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"in_axes": ({"w": "0"}, 0)}, r"in_axes entries must be ints or None; got '0'"),
    ({"in_axes": ([0, True],)}, r"in_axes entries must be ints or None; got True"),
    ({"out_axes": 1.5}, r"out_axes entries must be ints or None; got 1.5"),
    ({"out_axes": (0, {"a": False})}, r"out_axes entries must be ints or None; got False"),
    ({"in_axes": {"p": 0, "x": 0}}, r"in_axes must be an int, None or a tuple/list with one "
                                     r"entry per positional argument; got the dict"),
])
def test_bad_axis_entries_are_errors_when_vmap_is_made(kwargs, message):
    with pytest.raises(RlxError, match=message):
        rlx.vmap(lambda p, x: x, **kwargs)


def test_out_of_range_axes_in_prefixes_are_errors():
    p, x = {"w": rand(3), "b": rand(4, 3)}, rand(4, 3)
    with pytest.raises(RlxError, match=r"in_axes entry 2 is out of range for argument 0 "
                                       r"\(leaf b\) of rank 2"):
        rlx.vmap(lambda p, x: x, in_axes=({"w": None, "b": 2}, 0))(p, x)
    with pytest.raises(RlxError, match=r"out_axes entry 3 is out of range for output a of "
                                       r"rank 1 \(rank 2 once batched\)"):
        rlx.vmap(lambda x: {"a": x, "b": x}, out_axes={"a": 3, "b": 0})(x)
    with pytest.raises(RlxError, match="out_axes entry -3 is out of range for the output"):
        rlx.vmap(lambda x: x, out_axes=-3)(x)


def test_prefix_leaves_must_agree_on_the_batch_size():
    p = {"w": rand(5, 3), "b": rand(4, 3)}
    with pytest.raises(RlxError, match=r"disagree on the batch size: argument 0 \(leaf b\) "
                                       r"has 4, argument 0 \(leaf w\) has 5"):
        rlx.vmap(lambda p: p["w"] + p["b"], in_axes=({"w": 0, "b": 0},))(p)


def test_keyword_arguments_are_batched_along_axis_0_as_in_jax():
    import jax

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.linspace(0, 1, 6, dtype=np.float32).reshape(2, 3)
    f = lambda x, b, scale=2.0: (x * b).sum() * scale  # noqa: E731
    scale = np.array([1.0, 3.0], np.float32)
    for in_axes, args, kwargs in [(0, (x,), {"b": b}), ((0,), (x,), {"b": b, "scale": scale}),
                                  ((None,), (x[0],), {"b": b})]:
        np.testing.assert_allclose(rlx.vmap(f, in_axes=in_axes)(*args, **kwargs),
                                   jax.vmap(f, in_axes=in_axes)(*args, **kwargs), rtol=1e-6)
