"""jvp and vmap of the shape and linalg families and the indexing backward ops: tangents
vs finite differences, @f_vmap vs a loop of @f, and the JIT of both vs the interpreter."""

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.dialects.base import tensor
from rlx_mlir.testing import check_jvp
from rlx_mlir.transforms.vmap import vmap

B = 3
NP = {"f32": np.float32, "i32": np.int32, "i64": np.int64}


def _gb(shape):
    """``gather_backward`` into a table of ``shape``."""
    return lambda b, dy, ids, **kw: b.gather_backward(dy, ids, out=[tensor(shape, "f32")], **kw)


# name -> (operands {name: (shape, dtype, index extent)}, body). Float operands are params;
# index operands draw from [-2, extent + 2) (out of range on purpose), f32 ones with a NaN.
F = "f32"
CASES = {
    "reshape": ({"x": ((2, 6), F, 0)}, lambda b, x: b.reshape(x, (3, 1, 4))),
    "reshape_scalar": ({"x": ((1, 1), F, 0)}, lambda b, x: b.reshape(x, ())),
    "transpose": ({"x": ((2, 3, 4), F, 0)}, lambda b, x: b.transpose(x, perm=[2, -3, 1])),
    "expand": ({"x": ((3, 1), F, 0)}, lambda b, x: b.expand(x, (2, 3, 4))),
    "expand_same_rank": ({"x": ((1, 4), F, 0)}, lambda b, x: b.expand(x, (3, 4))),
    "concat": ({"x": ((2, 3), F, 0), "y": ((2, 5), F, 0)},
               lambda b, x, y: b.concat(x, y, axis=-1)),
    "concat_axis0": ({"x": ((1, 3), F, 0), "y": ((2, 3), F, 0), "z": ((2, 3), F, 0)},
                     lambda b, x, y, z: b.concat(x, y, z, axis=0)),
    "narrow": ({"x": ((4, 8), F, 0)}, lambda b, x: b.narrow(x, axis=-1, start=2, length=3)),
    "narrow_axis0": ({"x": ((4, 2), F, 0)}, lambda b, x: b.narrow(x, axis=0, start=1, length=3)),
    "gather": ({"w": ((5, 4), F, 0), "ids": ((2, 3), "i64", 5)},
               lambda b, w, ids: b.gather(w, ids, axis=0)),
    "gather_neg_axis": ({"w": ((3, 5, 2), F, 0), "ids": ((4,), "i32", 5)},
                        lambda b, w, ids: b.gather(w, ids, axis=-2)),
    "gather_scalar_ids": ({"w": ((2, 6), F, 0), "ids": ((), "i64", 6)},
                          lambda b, w, ids: b.gather(w, ids, axis=1)),
    "gather_f32_ids": ({"w": ((6, 2), F, 0), "ids": ((5,), F, 6)},
                       lambda b, w, ids: b.gather(w, ids, axis=0)),
    "scatter_add": ({"u": ((5, 4), F, 0), "ids": ((5,), "i64", 6)},
                    lambda b, u, ids: b.scatter_add(u, ids, 6, axis=0)),
    "scatter_add_neg_axis": ({"u": ((2, 4, 3), F, 0), "ids": ((4,), "i32", 3)},
                             lambda b, u, ids: b.scatter_add(u, ids, 3, axis=-2)),
    "scatter_add_f32_ids": ({"u": ((2, 5), F, 0), "ids": ((5,), F, 4)},
                            lambda b, u, ids: b.scatter_add(u, ids, 4, axis=1)),
    "matmul": ({"a": ((4, 3), F, 0), "b": ((3, 2), F, 0)}, lambda b, x, y: x @ y),
    "matmul_batched_lhs": ({"a": ((2, 4, 3), F, 0), "b": ((3, 5), F, 0)}, lambda b, x, y: x @ y),
    "matmul_batched_rhs": ({"a": ((4, 3), F, 0), "b": ((2, 3, 5), F, 0)}, lambda b, x, y: x @ y),
    "matmul_broadcast": ({"a": ((2, 1, 4, 3), F, 0), "b": ((5, 3, 2), F, 0)},
                         lambda b, x, y: x @ y),
    **{f"reduce_{k}{'_keep' if keep else ''}": (
        {"x": ((2, 3, 4), F, 0)},
        lambda b, x, k=k, keep=keep: b.emit(f"reduce_{k}", x, axes=[0, -1], keep_dims=keep))
       for k in ("sum", "mean", "max", "min", "prod") for keep in (False, True)},
    "reduce_max_all": ({"x": ((3, 4), F, 0)}, lambda b, x: b.reduce_max(x, axes=[1, 0])),
    "cumsum": ({"x": ((2, 5), F, 0)}, lambda b, x: b.cumsum(x)),
    "cumsum_exclusive_axis0": ({"x": ((4, 3), F, 0)},
                               lambda b, x: b.cumsum(x, axis=0, exclusive=True)),
    "cumsum_backward": ({"x": ((2, 5), F, 0)},
                        lambda b, x: b.cumsum_backward(x, axis=-1, out=[x.type])),
    "cumsum_backward_exclusive": ({"x": ((4, 3), F, 0)},
                                  lambda b, x: b.cumsum_backward(x, axis=0, exclusive=True,
                                                                 out=[x.type])),
    "gather_backward": ({"dy": ((2, 3, 4), F, 0), "ids": ((2, 3), "i64", 5)},
                        lambda b, dy, ids: _gb((5, 4))(b, dy, ids, axis=0)),
    "gather_backward_neg_axis": ({"dy": ((3, 4, 2), F, 0), "ids": ((4,), "i32", 5)},
                                 lambda b, dy, ids: _gb((3, 5, 2))(b, dy, ids, axis=-2)),
    "gather_backward_f32_ids": ({"dy": ((2, 3), F, 0), "ids": ((3,), F, 4)},
                                lambda b, dy, ids: _gb((2, 4))(b, dy, ids, axis=-1)),
}


def build(case):
    specs, body = CASES[case]
    b = rlx.Builder("f")
    args = [b.param(n, s) if extent == 0 else b.input(n, s, dtype)
            for n, (s, dtype, extent) in specs.items()]
    b.ret(body(b, *args))
    return b.module


def sample(shape, dtype, extent, rng):
    if extent == 0:
        return rng.standard_normal(shape).astype(NP[dtype])
    if dtype == F:
        v = rng.uniform(-2, extent + 2, shape).astype(np.float32)
        if v.size > 2:
            v.flat[1] = np.nan
        return v
    return rng.integers(-2, extent + 2, shape).astype(NP[dtype])


def floats(case):
    return [n for n, (_, _, extent) in CASES[case][0].items() if extent == 0]


def indices(case):
    return [n for n, (_, _, extent) in CASES[case][0].items() if extent]


# ---------------------------------------------------------------- jvp


@pytest.mark.parametrize("case", CASES)
def test_jvp_matches_finite_differences(case):
    rng = np.random.default_rng(1)
    specs = CASES[case][0]
    given = {n: sample(specs[n][0], specs[n][1], specs[n][2], rng) for n in indices(case)}
    given = {n: v.astype(np.float64) if v.dtype.kind == "f" else v for n, v in given.items()}
    names = floats(case)
    for wrt in [[n] for n in names] + ([names] if len(names) > 1 else []):
        check_jvp(build(case), wrt=wrt, args=given)


def test_jvp_of_reduce_max_averages_ties():
    b = rlx.Builder("f")
    x = b.param("x", (2, 3))
    b.ret(b.reduce_max(x, axes=[-1]), b.reduce_min(x, axes=[0], keep_dims=True))
    m = b.module
    rlx.jvp(m, "f")
    x = np.array([[1, 5, 5], [1, 0, 1]], np.float32)
    t = np.array([[7, 2, 4], [1, 9, 3]], np.float32)
    _, _, t_max, t_min = rlx.interpret(m, x, t, entry="f_jvp")
    np.testing.assert_allclose(t_max, [3, 2])          # (2 + 4) / 2, (1 + 3) / 2
    np.testing.assert_allclose(t_min, [[4, 9, 3]])     # (7 + 1) / 2, 9, 3


def test_jvp_gives_index_operands_no_tangent():
    """f32-encoded indices are float arguments but the tangent ignores their tangent."""
    m = build("gather_f32_ids")
    g = rlx.jvp(m, "f", wrt=["w", "ids"])
    assert len(g.function_type.inputs.data) == 4
    w, ids = np.ones((6, 2), np.float32), np.array([0, 1, 2, 3, 4], np.float32)
    _, t = rlx.interpret(m, w, ids, np.zeros((6, 2), np.float32), np.ones(5, np.float32),
                         entry="f_jvp")
    np.testing.assert_array_equal(t, 0)


# ---------------------------------------------------------------- vmap


def batch_choices(case):
    """Each operand batched alone, and all of them (when there are several)."""
    names = list(CASES[case][0])
    return [[n] for n in names] + ([names] if len(names) > 1 else [])


VMAP_CASES = [(c, bt) for c in CASES for bt in batch_choices(c)]


def vmap_args(case, batched, rng):
    return {n: sample(((B,) if n in batched else ()) + s, dtype, extent, rng)
            for n, (s, dtype, extent) in CASES[case][0].items()}


def loop(module, args, batched):
    rows = [rlx.interpret(module, entry="f", **{n: v[i] if n in batched else v
                                                 for n, v in args.items()})
            for i in range(B)]
    return [np.stack(outs) for outs in zip(*rows, strict=True)]


@pytest.mark.parametrize("case,batched", VMAP_CASES,
                         ids=[f"{c}-{'+'.join(bt)}" for c, bt in VMAP_CASES])
def test_vmap_matches_a_loop(case, batched):
    m = build(case)
    vmap(m, "f", batched, B)
    args = vmap_args(case, batched, np.random.default_rng(2))
    got = rlx.interpret(m, entry="f_vmap", **args)
    for g, w in zip(got, loop(m, args, batched), strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


def test_vmap_gather_batched_indices_are_per_element():
    """SPEC 9.18: each batch element gathers with its own indices from its own table."""
    b = rlx.Builder("f")
    w, ids = b.input("w", (4,)), b.input("ids", (2,), "i64")
    b.ret(b.gather(w, ids, axis=0))
    m = b.module
    vmap(m, "f", ["w", "ids"], 2)
    w = np.array([[0, 1, 2, 3], [10, 11, 12, 13]], np.float32)
    ids = np.array([[3, 0], [9, -1]], np.int64)   # clamped per element: [3, 0]
    (y,) = rlx.interpret(m, w, ids, entry="f_vmap")
    np.testing.assert_array_equal(y, [[3, 0], [13, 10]])


def test_vmap_scatter_add_into_an_empty_axis():
    b = rlx.Builder("f")
    u, ids = b.input("u", (3, 2)), b.input("ids", (3,), "i64")
    b.ret(b.scatter_add(u, ids, 0, axis=0))
    m = b.module
    vmap(m, "f", ["ids"], 2)
    (y,) = rlx.interpret(m, np.ones((3, 2), np.float32), np.zeros((2, 3), np.int64),
                         entry="f_vmap")
    assert y.shape == (2, 0, 2)


def test_vmap_of_jvp_and_jvp_of_vmap_compose():
    m = build("gather")
    rlx.jvp(m, "f", wrt=["w"])
    vmap(m, "f_jvp", ["ids", "tangent_w"], B)
    rng = np.random.default_rng(3)
    w, ids, tw = rng.standard_normal((5, 4)), rng.integers(0, 5, (B, 2, 3)), \
        rng.standard_normal((B, 5, 4))
    _, t = rlx.interpret(m, w.astype(np.float32), ids, tw.astype(np.float32),
                         entry="f_jvp_vmap")
    np.testing.assert_allclose(t, np.stack([tw[i][ids[i]] for i in range(B)]), rtol=1e-6)


# ---------------------------------------------------------------- JIT


def jit_model():
    """One module using every op family of this file (for the JIT checks)."""
    b = rlx.Builder("f")
    w, x, ids = b.param("w", (5, 4)), b.param("x", (3, 4)), b.input("ids", (3,), "i64")
    e = b.gather(w, ids, axis=0) * x                                   # [3, 4]
    s = b.scatter_add(e, ids, 5, axis=0) + w                           # [5, 4]
    h = b.transpose(b.narrow(s, axis=-1, start=1, length=3), perm=[1, 0]) @ b.tanh(s)
    r = b.concat(b.reduce_max(h, axes=[-2]), b.reduce_prod(h, axes=[0]), axis=0)
    c = b.cumsum(b.reshape(b.expand(b.reshape(r, (1, 8)), (2, 8)), (4, 4)), axis=-1)
    gb = b.gather_backward(b.reduce_mean(c, axes=[0], keep_dims=True), b.narrow(ids, axis=0,
                           start=0, length=1), axis=0, out=[tensor((2, 4), "f32")])
    b.ret(b.cumsum_backward(c, axis=0, exclusive=True, out=[c.type]) * 0.5,
          b.reduce_sum(gb, axes=[1]), b.reduce_min(x, axes=[0]))
    return b.module


def assert_jit_matches(module, entry, *arrays):
    got = rlx.compile(module, entry=entry)(*arrays)
    want = rlx.interpret(module, *arrays, entry=entry)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=2e-4, atol=1e-5)


@pytest.mark.usefixtures("private_cache_dir")
@pytest.mark.parametrize("batched", [["ids"], ["w", "x", "ids"]])
def test_jit_of_vmap_matches_interpreter(batched):
    m = jit_model()
    vmap(m, "f", batched, B)
    rng = np.random.default_rng(4)
    shapes = {"w": (5, 4), "x": (3, 4)}
    arrays = [rng.standard_normal(((B,) if n in batched else ()) + s).astype(np.float32)
              for n, s in shapes.items()]
    ids = rng.integers(-2, 7, ((B,) if "ids" in batched else ()) + (3,)).astype(np.int64)
    assert_jit_matches(m, "f_vmap", *arrays, ids)


@pytest.mark.usefixtures("private_cache_dir")
def test_jit_of_jvp_matches_interpreter():
    m = jit_model()
    rlx.jvp(m, "f")
    rng = np.random.default_rng(5)
    w, x, tw, tx = (rng.standard_normal(s).astype(np.float32)
                    for s in ((5, 4), (3, 4), (5, 4), (3, 4)))
    assert_jit_matches(m, "f_jvp", w, x, np.array([4, -1, 9]), tw, tx)


def test_every_case_is_exercised():
    built = {op.name for case in CASES for op in build(case).walk()}
    want = {"rlx.reshape", "rlx.transpose", "rlx.expand", "rlx.concat", "rlx.narrow",
            "rlx.gather", "rlx.scatter_add", "rlx.matmul", "rlx.reduce_sum", "rlx.reduce_mean",
            "rlx.reduce_max", "rlx.reduce_min", "rlx.reduce_prod", "rlx.cumsum",
            "rlx.cumsum_backward", "rlx.gather_backward"}
    assert want <= built, want - built
