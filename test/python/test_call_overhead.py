"""The fast call path of ``jit`` and of compiled executables: what it skips (a second
trace, a pointer lookup per argument) never changes a result or an error, and no
argument stays referenced after a call."""

import sys
import threading

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.frontend.tracing import Transformed
from rlx_mlir.runtime import jit


def square_module():
    b = rlx.Builder("f")
    x = b.input("x", (4,))
    b.ret(b.mul(x, x))
    return b.module


# ---------------------------------------------------------------- no reference kept


@pytest.mark.parametrize("how", ["jit", "compile", "compile by name"])
def test_an_argument_can_be_resized_after_a_call(how):
    """No reference (a weak one included) to an input outlives the call, so numpy's
    refcount-checked ``resize`` works, as after a JAX or numpy call."""
    run = jit.compile(square_module())
    call = {"jit": rlx.jit(lambda x: x * x), "compile": lambda a: run(a)[0],
            "compile by name": lambda a: run(x=a)[0]}[how]
    a = np.arange(4, dtype=np.float32)
    refs = sys.getrefcount(a)
    np.testing.assert_array_equal(call(a), a * a)
    np.testing.assert_array_equal(call(a), a * a)
    assert sys.getrefcount(a) == refs
    a.resize(8)
    a.resize((4,))
    np.testing.assert_array_equal(call(a), [0, 1, 4, 9])


def test_an_array_moved_by_resize_is_read_at_its_new_address():
    """A resize without refcheck may move an array's data: the next call reads it there
    (a pointer kept from the previous call would read freed memory)."""
    run = jit.compile(square_module())
    a = np.full(4, 2.0, np.float32)
    np.testing.assert_array_equal(run(a)[0], np.full(4, 4.0))
    for size in (1 << 16, 4):
        a.resize(size, refcheck=False)
    a[:] = 3.0
    np.testing.assert_array_equal(run(a)[0], np.full(4, 9.0))


def test_descriptors_point_at_each_array_data():
    arrays = [np.ones(3), np.zeros((2, 5), np.int32)[1:], np.array(True),
              np.empty((0, 4), np.float32), np.arange(10, dtype=np.int64)[4:]]
    descriptors = [jit.make_descriptor(a.shape) for a in arrays]
    jit.point(descriptors, arrays)
    for desc, a in zip(descriptors, arrays, strict=True):
        assert desc.aligned == desc.allocated == a.ctypes.data


# ---------------------------------------------------------------- checks and results kept


def test_compiled_errors_are_the_same_before_and_after_good_calls():
    run = jit.compile(square_module())
    good = np.ones(4, np.float32)
    bad = {"dtype": np.ones(4, np.float64), "shape": np.ones(5, np.float32),
           "list": [[1.0]], "count": None}

    def messages():
        out = {}
        for what, value in bad.items():
            args = (good, good) if value is None else (value,)
            with pytest.raises(ValueError) as error:
                run(*args)
            out[what] = str(error.value)
        return out

    cold = messages()
    for _ in range(3):
        run(good)
    assert messages() == cold
    assert "argument 'x' of @f: expected dtype float32 (f32), got float64" in cold["dtype"]
    assert "expected shape (4,), got (5,)" in cold["shape"]


@pytest.mark.parametrize("make", [
    lambda x: x[::2].copy()[::-1],                     # negative strides
    lambda x: np.asfortranarray(x.reshape(2, 4)).reshape(8, order="F")[:4],
    lambda x: x[::2],                                  # a strided view
    lambda x: np.ma.masked_array(x[:4]),              # a subclass
    lambda x: x[:4].tolist(),                          # a list (converted)
])
def test_arrays_not_ready_as_they_are_are_converted(make):
    run = jit.compile(square_module())
    x = np.arange(8, dtype=np.float32)
    value = make(x)
    want = np.asarray(value, np.float32) ** 2
    for _ in range(2):
        np.testing.assert_array_equal(run(value)[0], want)


def test_jit_reuses_the_native_call_and_sees_every_leaf_kind(monkeypatch):
    f = rlx.jit(lambda p, s, t: p["a"] * s + t[0] * p["b"])
    p = {"b": np.full(3, 2.0, np.float32), "a": np.arange(3, dtype=np.float32)}
    t = (np.ones(3, np.float32),)
    np.testing.assert_allclose(f(p, 2.0, t), p["a"] * 2 + 2)
    first_calls = []
    original = Transformed._first_call
    monkeypatch.setattr(Transformed, "_first_call",
                        lambda self, args: first_calls.append(1) or original(self, args))
    for scale in (3.0, 4.5):
        np.testing.assert_allclose(f(p, scale, t), p["a"] * scale + 2)
    np.testing.assert_allclose(f(p, 2.0, (np.asfortranarray(np.ones((3,), np.float32)),)),
                               p["a"] * 2 + 2)
    assert first_calls == []
    for scale in (np.float32(4.0), np.array(5.0, np.float32)):  # not weak: one more trace
        np.testing.assert_allclose(f(p, scale, t), p["a"] * scale + 2)
    assert first_calls == [1]
    np.testing.assert_allclose(f(p, 2.0, [t[0]]), p["a"] * 2 + 2)  # a list: a new trace
    np.testing.assert_allclose(f(p, np.float64(2.0), t), p["a"] * 2 + 2)  # f64: a new trace
    assert first_calls == [1, 1, 1]


def test_jit_structure_is_part_of_the_key():
    f = rlx.jit(lambda tree: tree)
    a, b = np.ones(2, np.float32), np.zeros(2, np.float32)
    assert isinstance(f((a, b)), tuple) and isinstance(f([a, b]), list)
    assert set(f({"x": a, "y": b})) == {"x", "y"}
    assert set(f({"u": a, "v": b})) == {"u", "v"}
    out = f({"x": a, "y": None})
    assert out["y"] is None and out["x"].tolist() == [1, 1]


@pytest.mark.parametrize("warm", [False, True])
def test_jit_errors_are_the_same_warm_and_cold(warm):
    f = rlx.jit(lambda x, n: x * n)
    x = np.ones(2, np.float32)
    if warm:
        f(x, 1)
    with pytest.raises(rlx.RlxError, match="unsupported argument dtype uint8"):
        f(x.astype(np.uint8), 1)
    with pytest.raises(rlx.RlxError, match="does not fit int32"):
        f(x, 2**40)
    with pytest.raises(rlx.RlxError, match="unsupported argument dtype <U3"):
        f(x, "abc")
    with pytest.raises(rlx.RlxError, match="cannot call"):
        f(x, 1, m=2)


def test_gradient_seeds_are_shared_and_unchanged():
    vg = rlx.value_and_grad(lambda x: (x * x).sum())
    x = np.arange(3, dtype=np.float32)
    for _ in range(3):
        loss, grad = vg(x)
        assert float(loss) == 5.0
        np.testing.assert_array_equal(grad, 2 * x)


def test_keyword_calls_use_the_cached_signature():
    f = rlx.jit(lambda x, scale=1.0: x * scale)
    x = np.ones(2, np.float32)
    np.testing.assert_array_equal(f(x, scale=3.0), [3, 3])
    np.testing.assert_array_equal(f(x=x), [1, 1])
    with pytest.raises(rlx.RlxError, match="multiple values for argument 'x'"):
        f(x, x=x)
    g = rlx.jit(lambda x, k: x * 2.0 if k else x, static_argnums=1)
    np.testing.assert_array_equal(g(x, k=True), [2, 2])
    np.testing.assert_array_equal(g(x, k=False), [1, 1])


def test_concurrent_calls_each_get_their_own_result():
    f = rlx.jit(lambda x: x * 2.0)
    errors = []

    def work(k: int) -> None:
        for i in range(200):
            x = np.full(16, float(k * 1000 + i), np.float32)
            if not np.array_equal(f(x), 2 * x):
                errors.append((k, i))

    f(np.zeros(16, np.float32))
    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []


def test_no_leaf_of_a_pytree_stays_referenced():
    f = rlx.value_and_grad(lambda p, x: (p["w"] * x).sum())
    p, x = {"w": np.ones(3, np.float32)}, np.arange(3, dtype=np.float32)
    refs = [sys.getrefcount(a) for a in (p["w"], x)]
    for _ in range(2):
        loss, grad = f(p, x)
    assert [sys.getrefcount(a) for a in (p["w"], x)] == refs
    assert float(loss) == 3.0 and grad["w"].tolist() == [0, 1, 2]
    x.resize(6)
