"""The JIT against the interpreter on the shape family and the activation backward ops.

Every module is compiled once per shape signature; each test bundles the variants of
an op (attributes, dtypes, edge-case indices) into one function.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlx_mlir as rlx
from rlx_mlir.dialects.backward.activation import DERIVATIVES
from rlx_mlir.dialects.shape import DATA_DTYPES, NUMERIC_DTYPES, reshape_segments
from rlx_mlir.runtime.jit import compile as jit_compile

NP = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i64": np.int64, "i1": np.bool_,
      "c64": np.complex64, "c128": np.complex128}
RTOL = {"f32": 1e-5, "f64": 1e-12}
INDEX_DTYPES = ("i32", "i64", "f32", "f64")
FEW = settings(max_examples=8, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])




def assert_jit_matches(module, *arrays, dtype="f32", entry=None):
    """JIT results equal the interpreter's (floats to RTOL[dtype], NaN where NaN)."""
    got = jit_compile(module, entry=entry)(*arrays)
    want = rlx.interpret(module, *arrays, entry=entry)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, rtol=RTOL[dtype], atol=RTOL[dtype])
        else:
            np.testing.assert_array_equal(g, w)


def data(shape, dtype, rng):
    """Random values of any data dtype (small integers, booleans, normal floats)."""
    if dtype == "i1":
        return rng.random(shape) < 0.5
    if dtype in ("i32", "i64"):
        return rng.integers(-9, 10, shape).astype(NP[dtype])
    if dtype in ("c64", "c128"):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(NP[dtype])
    return rng.standard_normal(shape).astype(NP[dtype])


def edge_indices(dtype, extent):
    """In range, negative, past the end, and for floats NaN, +-inf and fractions."""
    ints = [-5, -1, 0, 1, extent - 1, extent, extent + 3, 2]
    if dtype == "i64":
        ints += [2**40, -(2**40)]
    if dtype in ("i32", "i64"):
        return np.array(ints, NP[dtype])
    floats = [math.nan, -math.inf, math.inf, -0.5, -1.5, 0.9, extent - 0.01, extent, 1e30, -1e30]
    return np.array(ints + floats, NP[dtype])


# ---------------------------------------------------------------- reshape ... narrow


@pytest.mark.parametrize("dtype", DATA_DTYPES)
def test_data_movement_ops_every_variant(dtype, rng):
    b = rlx.Builder("f")
    x, s = b.input("x", (2, 3, 4), dtype), b.input("s", (), dtype)
    y = b.input("y", (2, 1, 4), dtype)
    b.ret(
        b.reshape(x, (6, 4)), b.reshape(x, (2, 3, 2, 2)), b.reshape(x, (4, 6)),
        b.reshape(x, (24,)), b.reshape(x, (1, 2, 1, 12, 1)), b.reshape(s, (1, 1)),
        b.reshape(y, (8,)), b.reshape(y, (2, 4, 1)), b.reshape(b.reshape(s, (1,)), ()),
        b.transpose(x, perm=(2, 0, 1)), b.transpose(x, perm=(-1, -2, 0)),
        b.transpose(x, perm=(0, 1, 2)), b.transpose(s, perm=()),
        b.expand(x, (5, 2, 3, 4)), b.expand(y, (3, 2, 6, 4)), b.expand(s, (2, 3)),
        b.expand(x, (2, 3, 4)),
        b.concat(x, y, x, axis=1), b.concat(x, x, axis=-1), b.concat(x, axis=0),
        b.narrow(x, axis=0, start=1, length=1), b.narrow(x, axis=1, start=0, length=2),
        b.narrow(x, axis=-1, start=1, length=3),
        b.reshape(b.narrow(x, axis=2, start=1, length=2), (12,)),  # collapse of a strided view
    )
    args = [data((2, 3, 4), dtype, rng), data((), dtype, rng), data((2, 1, 4), dtype, rng)]
    assert_jit_matches(b.module, *args, dtype=dtype)


@st.composite
def reshape_pairs(draw):
    """Two shapes with the same element count, built from a shared list of factors."""
    factors = draw(st.lists(st.sampled_from([1, 2, 3, 4]), min_size=0, max_size=5))

    def split():
        cuts = sorted(draw(st.lists(st.integers(0, len(factors)), max_size=4)))
        bounds = [0, *cuts, len(factors)]
        return tuple(math.prod(factors[a:b]) for a, b in zip(bounds, bounds[1:], strict=False))

    return split(), split()


@given(reshape_pairs())
@settings(max_examples=200, deadline=None)
def test_reshape_segments_are_consistent(pair):
    src, dst = pair
    segments = reshape_segments(src, dst)
    if segments is None:
        assert not src or not dst or 0 in src
        return
    src_groups, dst_groups = segments
    assert sum(src_groups, []) == list(range(len(src)))
    assert sum(dst_groups, []) == list(range(len(dst)))
    for g, h in zip(src_groups, dst_groups, strict=True):
        assert math.prod(src[d] for d in g) == math.prod(dst[d] for d in h)


@given(reshape_pairs(), st.sampled_from(["f32", "i64"]))
@FEW
def test_reshape_random_shapes(pair, dtype):
    src, dst = pair
    b = rlx.Builder("f")
    b.ret(b.reshape(b.input("x", src, dtype), dst))
    assert_jit_matches(b.module, data(src, dtype, np.random.default_rng(1)), dtype=dtype)


@given(st.lists(st.integers(1, 4), min_size=1, max_size=4), st.randoms(use_true_random=False))
@FEW
def test_transpose_and_expand_random_shapes(shape, random):
    perm = list(range(len(shape)))
    random.shuffle(perm)
    source = [1 if random.random() < 0.4 else d for d in shape][random.randint(0, len(shape)):]
    b = rlx.Builder("f")
    b.ret(b.transpose(b.input("x", shape, "f64"), perm=perm),
          b.expand(b.input("y", source, "f64"), shape))
    rng = np.random.default_rng(2)
    assert_jit_matches(b.module, data(shape, "f64", rng), data(source, "f64", rng), dtype="f64")


# ---------------------------------------------------------------- gather


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_gather_clamps_every_index_dtype(index_dtype, rng):
    """Every table dtype, axes 0 / 1 / -1, rank-0 and rank-2 indices, edge-case indices."""
    b = rlx.Builder("f")
    ids = b.input("ids", edge_indices(index_dtype, 4).shape, index_dtype)
    grid = b.reshape(ids, (2, -1))
    point = b.narrow(ids, axis=0, start=3, length=1)
    outs, args = [], [edge_indices(index_dtype, 4)]
    for dtype in DATA_DTYPES:
        table = b.input(f"t_{dtype}", (4, 4, 3), dtype)
        args.append(data((4, 4, 3), dtype, rng))
        outs += [b.gather(table, ids), b.gather(table, grid, axis=1),
                 b.gather(table, b.reshape(point, ()), axis=0)]
    outs.append(b.gather(b.input("t_last", (2, 4), "f32"), grid, axis=-1))
    args.append(data((2, 4), "f32", rng))
    b.ret(*outs)
    assert_jit_matches(b.module, *args)


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_gather_of_long_rows_copies_them(index_dtype, rng):
    """Rows of ROW_GATHER_MIN elements or more are copied whole (one forall over the lead
    and index positions): every table dtype, rank-0/1/2 indices, odd counts, lead dims
    before the axis, edge indices (negative, past the end, NaN for floats), results
    returned reshaped."""
    from rlx_mlir.dialects.shape import ROW_GATHER_MIN

    b = rlx.Builder("f")
    count = len(edge_indices(index_dtype, 6))
    ids = b.input("ids", (count,), index_dtype)
    point = b.reshape(b.narrow(ids, axis=0, start=2, length=1), ())
    three = b.narrow(ids, axis=0, start=0, length=3)
    grid = b.reshape(b.concat(ids, ids, axis=0), (2, count))
    outs, args = [], [edge_indices(index_dtype, 6)]
    for dtype in DATA_DTYPES:
        table = b.input(f"t_{dtype}", (6, 2, ROW_GATHER_MIN // 2), dtype)
        args.append(data((6, 2, ROW_GATHER_MIN // 2), dtype, rng))
        outs += [b.gather(table, ids), b.gather(table, point), b.gather(table, three),
                 b.gather(table, grid)]
    for shape in ((3, 6, ROW_GATHER_MIN), (4, 6, 2, ROW_GATHER_MIN // 2)):  # lead dims
        table = b.input(f"lead_{len(shape)}", shape, "f32")
        args.append(data(shape, "f32", rng))
        outs += [b.gather(table, ids, axis=1), b.gather(table, grid, axis=1),
                 b.gather(table, point, axis=1)]
    b.ret(*outs)
    assert_jit_matches(b.module, *args)


def test_an_embedding_is_written_in_place_into_its_result():
    """The row copies land in the caller's result buffer: no copy of the whole result
    after them (the reshape of the [ids, row] buffer to the result's shape was a memcpy)."""
    b = rlx.Builder("f")
    b.ret(b.gather(b.input("t", (100, 64), "f32"), b.input("ids", (4, 6), "i32")))
    f = jit_compile(b.module)
    assert "llvm.intr.memcpy" not in f.engine.llvm_text
    rng = np.random.default_rng(0)
    table, ids = data((100, 64), "f32", rng), rng.integers(0, 100, (4, 6)).astype(np.int32)
    np.testing.assert_array_equal(f(table, ids)[0], table[ids])


@given(st.lists(st.integers(1, 4), min_size=1, max_size=3),
       st.lists(st.integers(1, 3), max_size=2), st.data())
@FEW
def test_gather_random_shapes(table_shape, index_shape, draw):
    axis = draw.draw(st.integers(-len(table_shape), len(table_shape) - 1))
    extent = table_shape[axis]
    rng = np.random.default_rng(3)
    indices = rng.integers(-2, extent + 2, index_shape).astype(np.int64)
    b = rlx.Builder("f")
    b.ret(b.gather(b.input("t", table_shape, "f64"), b.input("i", index_shape, "i64"), axis=axis))
    assert_jit_matches(b.module, data(table_shape, "f64", rng), indices, dtype="f64")


# ---------------------------------------------------------------- scatter_add


@pytest.mark.parametrize("index_dtype", INDEX_DTYPES)
def test_scatter_add_drops_out_of_range_and_accumulates(index_dtype, rng):
    """Numeric dtypes, axes 0 / 1 / -1; duplicates add up, bad indices are dropped."""
    indices = edge_indices(index_dtype, 4)
    count = len(indices)
    b = rlx.Builder("f")
    ids = b.input("ids", (count,), index_dtype)
    outs, args = [], [indices]
    for dtype in NUMERIC_DTYPES:
        rows = b.input(f"rows_{dtype}", (count, 3), dtype)
        cols = b.input(f"cols_{dtype}", (2, count, 3), dtype)
        args += [data((count, 3), dtype, rng), data((2, count, 3), dtype, rng)]
        outs += [b.scatter_add(rows, ids, 4, axis=0), b.scatter_add(cols, ids, 5, axis=1)]
    last = b.input("last", (3, count), "f64")
    args.append(data((3, count), "f64", rng))
    outs.append(b.scatter_add(last, ids, 4, axis=-1))
    b.ret(*outs)
    assert_jit_matches(b.module, *args, dtype="f32")


@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(1, 5), st.data())
@FEW
def test_scatter_add_random_shapes(shape, extent, draw):
    axis = draw.draw(st.integers(0, len(shape) - 1))
    rng = np.random.default_rng(4)
    indices = rng.integers(-1, extent + 1, shape[axis]).astype(np.int32)
    b = rlx.Builder("f")
    ids = b.input("i", (shape[axis],), "i32")
    b.ret(b.scatter_add(b.input("u", shape, "f64"), ids, extent, axis=axis))
    assert_jit_matches(b.module, indices, data(shape, "f64", rng), dtype="f64")


# ---------------------------------------------------------------- activation backward

SPECIALS = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.0, -1.0, 0.5, 1e-3]


def backward_inputs(kind, dtype, rng):
    """x: normal values (positive for log), plus 0, -0, NaN, +-inf; dy: normal."""
    x = rng.standard_normal(31) * 2
    if kind == "log":
        x = np.abs(x) + 0.1
    x = np.concatenate([x, SPECIALS]).astype(NP[dtype])
    return x, rng.standard_normal(x.shape).astype(NP[dtype])


@pytest.mark.parametrize("kind", sorted(DERIVATIVES))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_activation_backward(kind, dtype, rng):
    b = rlx.Builder("f")
    x, dy = b.input("x", (40,), dtype), b.input("dy", (40,), dtype)
    b.ret(b.activation_backward(x, dy, kind=kind))
    assert_jit_matches(b.module, *backward_inputs(kind, dtype, rng), dtype=dtype)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_relu_backward_and_relu_kind_with_infinite_dy(dtype, rng):
    """relu_backward selects (0 where x <= 0 or NaN, even for dy = inf); kind relu multiplies."""
    b = rlx.Builder("f")
    x, dy = b.input("x", (4, 10), dtype), b.input("dy", (4, 10), dtype)
    b.ret(b.relu_backward(x, dy), b.activation_backward(x, dy, kind="relu"))
    xs = rng.standard_normal((4, 10)).astype(NP[dtype])
    xs[0, :3] = [0.0, math.nan, -0.0]
    dys = rng.standard_normal((4, 10)).astype(NP[dtype])
    dys[0, :4] = [math.inf, math.inf, -math.inf, math.nan]
    assert_jit_matches(b.module, xs, dys, dtype=dtype)


# ---------------------------------------------------------------- a small model


def embedding_model():
    """Embedding lookup -> reshape -> concat with features -> transpose/narrow -> tanh."""
    b = rlx.Builder("f")
    ids = b.input("ids", (2, 3), "i64")
    feats = b.input("feats", (2, 5))
    table = b.param("table", (10, 4))
    emb = b.gather(table, ids)                              # [2, 3, 4]
    flat = b.reshape(emb, (2, 12))
    joined = b.concat(flat, feats, axis=1)                  # [2, 17]
    cols = b.transpose(joined, perm=(1, 0))                 # [17, 2]
    head = b.narrow(cols, axis=0, start=2, length=8)        # [8, 2]
    wide = b.expand(b.reshape(head, (8, 1, 2)), (8, 3, 2))
    b.ret(b.tanh(wide))
    return b


def model_inputs(rng):
    ids = np.array([[1, 9, 12], [-3, 4, 4]], np.int64)   # 12 and -3 are clamped
    return ids, rng.standard_normal((2, 5)).astype(np.float32), \
        rng.standard_normal((10, 4)).astype(np.float32)


def test_embedding_model(rng):
    assert_jit_matches(embedding_model().module, *model_inputs(rng))


def test_embedding_model_gradient(rng):
    """The table gradient flows back through the lookup (id 4 twice, 12 and -3 clamped)."""
    b = rlx.Builder("f")
    ids = b.input("ids", (2, 3), "i64")
    feats = b.input("feats", (2, 5))
    table = b.param("table", (10, 4))
    flat = b.reshape(b.gather(table, ids), (2, 12))
    joined = b.transpose(b.concat(flat, feats, axis=1), perm=(1, 0))
    head = b.narrow(joined, axis=0, start=2, length=8)
    b.ret(b.reduce_sum(b.tanh(head) * head, axes=[0, 1]))
    rlx.grad_with_loss(b.module)
    assert_jit_matches(b.module, *model_inputs(rng), np.float32(1.0), entry="f_grad")
