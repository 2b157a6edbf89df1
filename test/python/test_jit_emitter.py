"""The rule-author API (Emitter) end to end: each helper built by hand, JIT-compiled,
compared with numpy. Family rules build on these, so they are checked here on their own."""

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.rewriter import InsertPoint

from rlx_mlir.dialects.base import tensor
from rlx_mlir.lowering import Emitter
from rlx_mlir.runtime.jit import compile as jit_compile


def build(arg_types, body):
    """``func.func @f(args) -> results`` whose body ``body(emitter, *args)`` emits."""
    block = Block(arg_types=arg_types)
    results = body(Emitter(InsertPoint.at_end(block)), *block.args)
    results = results if isinstance(results, (list, tuple)) else [results]
    block.add_op(func.ReturnOp(*results))
    f = func.FuncOp("f", (arg_types, [r.type for r in results]), Region(block))
    return ModuleOp([f])


def run(arg_types, body, *arrays):
    return jit_compile(build(arg_types, body))(*arrays)


def test_reduce_sum_and_max_with_keep_dims(rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)

    def body(e, v):
        total = e.reduce(v, [0, 2], 0.0, lambda s, a, acc: s.add(a, acc))
        peak = e.reduce(v, [1], -np.inf, lambda s, a, acc: s.max(a, acc), keep_dims=True)
        return total, peak

    total, peak = run([tensor((3, 4, 5))], body, x)
    np.testing.assert_allclose(total, x.sum(axis=(0, 2)), rtol=1e-5)
    np.testing.assert_array_equal(peak, x.max(axis=1, keepdims=True))


def test_matmul_and_batch_matmul(rng):
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 5)).astype(np.float32)
    ba = rng.standard_normal((2, 3, 4)).astype(np.float64)
    bb = rng.standard_normal((2, 4, 5)).astype(np.float64)
    types = [tensor((3, 4)), tensor((4, 5)), tensor((2, 3, 4), "f64"), tensor((2, 4, 5), "f64")]
    mm, bmm = run(types, lambda e, p, q, r, t: (e.matmul(p, q), e.batch_matmul(r, t)), a, b, ba, bb)
    np.testing.assert_allclose(mm, a @ b, rtol=1e-5)
    np.testing.assert_allclose(bmm, ba @ bb, rtol=1e-12)


def test_transpose_reshape_broadcast_fill_constant(rng):
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    const = np.arange(4, dtype=np.float32)

    def body(e, v):
        return (e.transpose(v, [2, 0, 1]), e.reshape(v, [6, 4]), e.reshape(v, [24]),
                e.broadcast_to(e.constant(const), [3, 4]), e.fill(7, [2], "i32"))

    t, r, flat, bc, filled = run([tensor((2, 3, 4))], body, x)
    np.testing.assert_array_equal(t, x.transpose(2, 0, 1))
    np.testing.assert_array_equal(r, x.reshape(6, 4))
    np.testing.assert_array_equal(flat, x.reshape(24))
    np.testing.assert_array_equal(bc, np.broadcast_to(const, (3, 4)))
    np.testing.assert_array_equal(filled, [7, 7])


def test_reshape_to_and_from_rank0():
    def body(e, v):
        return e.reshape(e.reshape(v, []), [1, 1])

    out = run([tensor((1,))], body, np.array([2.5], np.float32))[0]
    assert out.shape == (1, 1) and out[0, 0] == 2.5


def test_generic_with_reduction_iterator_and_bool_output(rng):
    """A row-wise 'any positive' written with generic: i1 accumulators are stored as bytes."""
    from xdsl.ir.affine import AffineMap

    x = rng.standard_normal((4, 6)).astype(np.float32)
    x[2] = -1.0

    def body(e, v):
        init = e.fill(False, [4], "i1")
        maps = [AffineMap.identity(2), AffineMap.from_callable(lambda i, j: (i,))]
        return e.generic([v], [init], maps, ["parallel", "reduction"],
                         lambda s, a, acc: s.select(s.cmp("gt", a, 0.0), True, acc))

    out = run([tensor((4, 6))], body, x)[0]
    np.testing.assert_array_equal(out, (x > 0).any(axis=1))


def test_extract_and_insert_slice(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)

    def body(e, v):
        part = e.extract_slice(v, [1, 0], [2, 3], [2, 2])
        return part, e.insert_slice(part, e.fill(0.0, [4, 6], "f32"), [2, 3])

    part, placed = run([tensor((4, 6))], body, x)
    np.testing.assert_array_equal(part, x[1:5:2, 0:6:2])
    want = np.zeros((4, 6), np.float32)
    want[2:4, 3:6] = x[1:5:2, 0:6:2]
    np.testing.assert_array_equal(placed, want)
