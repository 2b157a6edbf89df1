"""Scans, if, while and custom_fn: forward semantics, autodiff and the SPEC 8 named tests."""

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.dialects.control import checkpoint_steps, scan_memory_report
from rlx_mlir.testing import check_grads, promote_to_f64


def ops_named(func_op, name):
    return [op for op in func_op.walk() if op.name == name]


def scan_model(length=6, k=0, with_xs=True, with_bcast=True, final_carry=True):
    b = rlx.Builder("f")
    x0 = b.param("x0", (3,))
    xs = [b.param("xs", (length, 3))] if with_xs else []
    bc = [b.param("w", (3,))] if with_bcast else []

    def body(b, c, *rest):
        y = c * rest[0] if with_bcast else c * 0.9
        return b.tanh(y + rest[-1]) if with_xs else b.sin(y) + c * 0.5

    out = b.scan(x0, body, length=length, xs=xs, bcasts=bc, num_checkpoints=k,
                 save_trajectory=not final_carry)
    b.ret(b.reduce_sum(out * out, axes=list(range(out.ndim))))
    return b.module


def test_scan_geometric_growth_f64():
    b = rlx.Builder("f")
    x = b.input("x", (4,), "f64")
    b.ret(b.scan(x, lambda b, c: c * 1.1, length=10))
    np.testing.assert_allclose(rlx.interpret(b.module, np.ones(4))[0], 1.1**10, rtol=1e-14)


def test_scan_with_xs_cumulative_sum():
    b = rlx.Builder("f")
    init, xs = b.input("init", (3,), "f64"), b.input("xs", (5, 3), "f64")
    b.ret(b.scan(init, lambda b, c, x: c + x, length=5, xs=[xs]))
    rng = np.random.default_rng(0)
    i, x = rng.standard_normal(3), rng.standard_normal((5, 3))
    np.testing.assert_allclose(rlx.interpret(b.module, i, x)[0], i + x.sum(0))


def test_trajectory_rows_are_carries_after_each_step():
    b = rlx.Builder("f")
    x = b.input("x", (1,), "f64")
    b.ret(b.scan(x, lambda b, c: c * 2.0, length=4, save_trajectory=True))
    np.testing.assert_array_equal(rlx.interpret(b.module, np.ones(1))[0][:, 0], [2, 4, 8, 16])


def test_checkpoint_steps_use_ceil():
    assert checkpoint_steps(6, 2) == [2, 5]
    assert checkpoint_steps(4, 3) == [1, 2, 3]
    assert checkpoint_steps(1000, 32)[-1] == 999 and len(checkpoint_steps(1000, 32)) == 32


def test_scan_gradient_geometric_matches_closed_form():
    b = rlx.Builder("f")
    x = b.param("x", (2,), "f64")
    b.ret(b.reduce_sum(b.scan(x, lambda b, c: c * 1.1, length=7), axes=[0]))
    rlx.grad_with_loss(b.module)
    _, dx = rlx.interpret(b.module, np.ones(2), 1.0, entry="f_grad")
    np.testing.assert_allclose(dx, 1.1**7, rtol=1e-13)


@pytest.mark.parametrize("k", [0, 2, 3, 6])
@pytest.mark.parametrize("with_xs,with_bcast", [(True, True), (True, False), (False, True),
                                                 (False, False)])
def test_scan_gradients_match_finite_differences(k, with_xs, with_bcast):
    check_grads(scan_model(6, k, with_xs, with_bcast))


def test_trajectory_scan_gradient():
    check_grads(scan_model(5, 0, final_carry=False))
    check_grads(scan_model(6, 3, final_carry=False))


def test_checkpointed_forward_value_equals_plain_scan():
    """The reference reads a zero row here (SPEC 9.15); we read the final carry."""
    plain, ckpt = promote_to_f64(scan_model(9, 0)), promote_to_f64(scan_model(9, 3))
    rlx.grad_with_loss(plain)
    rlx.grad_with_loss(ckpt)
    rng = np.random.default_rng(1)
    args = [rng.standard_normal(s) for s in [(3,), (9, 3), (3,)]]
    a = rlx.interpret(plain, *args, 1.0, entry="f_grad")
    c = rlx.interpret(ckpt, *args, 1.0, entry="f_grad")
    for x, y in zip(a, c, strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-12)


def test_scan_checkpointed_grad_matches_plain_scan_grad():
    def model(k):
        b = rlx.Builder("f")
        x = b.param("x", (2,), "f64")
        b.ret(b.reduce_sum(b.scan(x, lambda b, c: c * 1.05, length=6, num_checkpoints=k),
                           axes=[0]))
        rlx.grad_with_loss(b.module)
        return rlx.interpret(b.module, np.array([1.0, 2.0]), 1.0, entry="f_grad")[1]

    np.testing.assert_allclose(model(2), model(0), rtol=1e-12)


def test_long_checkpointed_scan_stores_32_carries_and_matches_store_all():
    def model(k):
        b = rlx.Builder("f")
        x, xs = b.param("x", (2,), "f64"), b.param("xs", (1000, 2), "f64")
        c = b.scan(x, lambda b, c, u: c + 0.01 * b.sin(c + u), length=1000, xs=[xs],
                   num_checkpoints=k)
        b.ret(b.reduce_sum(c * c, axes=[0]))
        rlx.grad_with_loss(b.module)
        return b.module

    rng = np.random.default_rng(0)
    args = [rng.standard_normal(2), rng.standard_normal((1000, 2))]
    full, ckpt = model(0), model(32)
    (line,) = [ln for ln in scan_memory_report(ckpt)]
    assert "stores 32 carries of 16 bytes = 512 bytes" in line
    assert "stores 1000 carries" in scan_memory_report(full)[0]
    a = rlx.interpret(full, *args, 1.0, entry="f_grad")
    c = rlx.interpret(ckpt, *args, 1.0, entry="f_grad")
    for x, y in zip(a, c, strict=True):
        np.testing.assert_allclose(y, x, rtol=1e-10, atol=1e-12)


def if_model():
    b = rlx.Builder("f")
    p, x = b.input("p", (1,), "i1"), b.param("x", (3,))
    y = b.cond(p, lambda b, a: b.relu(a) * a, lambda b, a: b.sigmoid(a), x)
    b.ret(b.reduce_sum(y, axes=[0]))
    return b.module


def test_inline_if_replaces_with_where():
    m = if_model()
    g = rlx.grad_with_loss(m)
    assert not ops_named(g, "rlx.if")
    assert len(ops_named(g, "rlx.where")) >= 1
    assert ops_named(g, "rlx.relu") and ops_named(g, "rlx.sigmoid")


@pytest.mark.parametrize("pred", [True, False])
def test_grad_through_if(pred):
    check_grads(if_model(), args={"p": np.array([pred])})


def while_model(bound=6):
    b = rlx.Builder("f")
    x = b.param("x", (), "f32")
    y = b.while_loop(x, lambda b, s: b.compare(s, b.full((), 5.0), predicate="lt"),
                     lambda b, s: s * 1.5 + 0.25, max_iterations=bound)
    b.ret(y)
    return b.module


@pytest.mark.parametrize("bound", [3, 500])
def test_grad_of_while_is_one_masked_scan_whatever_the_bound(bound):
    """The loop becomes a scan of max_iterations steps (its VJP a scan_backward), the
    body appearing once in the forward and once in the backward, not ``bound`` times."""
    b = rlx.Builder("f")
    x = b.param("x", (3,))
    b.ret(b.reduce_sum(b.while_loop(x, lambda b, s: b.full((), True, "i1"),
                                    lambda b, s: b.relu(s), max_iterations=bound), axes=[0]))
    g = rlx.grad_with_loss(b.module)
    assert not ops_named(g, "rlx.while")
    (scan,) = ops_named(g, "rlx.scan")
    assert scan.attributes["length"].value.data == bound
    assert len(ops_named(g, "rlx.relu")) == 1
    assert len(ops_named(g, "rlx.scan_backward")) == 1


@pytest.mark.parametrize("x", [0.3, 2.0, 4.9, 7.0])
def test_while_with_early_exit_is_differentiated_exactly(x):
    """The loop stops after a data-dependent number of steps; the gradient follows it."""
    rep = check_grads(while_model(), args={"x": np.array(x)})
    assert rep.ok
    steps = 0
    while x < 5.0 and steps < 6:
        x, steps = x * 1.5 + 0.25, steps + 1
    m = while_model()
    rlx.grad_with_loss(m)
    _, dx = rlx.interpret(m, np.float32(rep.args and x), np.float32(1), entry="f_grad")
    assert dx.shape == ()


def test_while_without_bound_is_rejected_under_autodiff():
    b = rlx.Builder("f")
    x = b.param("x", ())
    b.ret(b.while_loop(x, lambda b, s: b.compare(s, b.full((), 5.0), predicate="lt"),
                       lambda b, s: s * 2.0))
    with pytest.raises(rlx.RlxError, match="needs a max_iterations attribute"):
        rlx.grad_with_loss(b.module)


def test_custom_fn_vjp_overrides_natural_gradient():
    b = rlx.Builder("f")
    x = b.param("x", (3,), "f64")
    y = b.custom_fn([x], lambda b, a: a, vjp=lambda b, a, y, g: g * 2.0)
    b.ret(b.reduce_sum(y, axes=[0]))
    rlx.grad_with_loss(b.module)
    _, dx = rlx.interpret(b.module, np.ones(3), 1.0, entry="f_grad")
    np.testing.assert_array_equal(dx, [2, 2, 2])


def test_custom_fn_vjp_body_is_inlined_into_bwd():
    b = rlx.Builder("f")
    x = b.param("x", (3,))
    y = b.custom_fn([x], lambda b, a: a * a, vjp=lambda b, a, y, g: b.sin(g))
    b.ret(b.reduce_sum(y, axes=[0]))
    g = rlx.grad_with_loss(b.module)
    assert ops_named(g, "rlx.sin")


def test_custom_fn_without_vjp_inlines_fwd_body_for_autodiff():
    b = rlx.Builder("f")
    x = b.param("x", (3,))
    y = b.custom_fn([x], lambda b, a: a * a)
    b.ret(b.reduce_sum(y, axes=[0]))
    g = rlx.grad_with_loss(b.module)
    assert not ops_named(g, "rlx.custom_fn")
    assert len(ops_named(g, "rlx.mul")) >= 2
    check_grads(b.module)


def test_custom_fn_vjp_two_inputs_matches_mul_autodiff():
    b = rlx.Builder("f")
    a, c = b.param("a", (), "f64"), b.param("c", (), "f64")
    y = b.custom_fn([a, c], lambda b, x, y: x * y, vjp=lambda b, x, y, out, g: (g * y, g * x))
    b.ret(y)
    rlx.grad_with_loss(b.module)
    _, da, dc = rlx.interpret(b.module, np.array(3.0), np.array(5.0), 1.0, entry="f_grad")
    assert (da, dc) == (5.0, 3.0)


def test_custom_fn_forward_inlines_body():
    b = rlx.Builder("f")
    x = b.input("x", (3,))
    b.ret(b.custom_fn([x], lambda b, a: a + 1.0))
    out = rlx.interpret(b.module, np.array([10, 20, 30], np.float32))[0]
    np.testing.assert_array_equal(out, [11, 21, 31])


@pytest.mark.parametrize("as_bcast", [False, True])
def test_scan_gradient_with_integer_step_or_broadcast_inputs(as_bcast):
    """Token ids (per step or broadcast) get no gradient; the float carry's is exact."""
    b = rlx.Builder("f")
    h = b.param("h", (3,))
    ints = b.input("t", (3,), "i32")
    step = lambda b, c, i: c * b.cast(i, "f32") + 1.0  # noqa: E731
    kwargs = {"bcasts": [ints]} if as_bcast else {"xs": [ints]}
    b.ret(b.reduce_sum(b.scan(h, step, length=3, **kwargs), axes=[0]))
    t = np.array([1, 2, -1], np.int32)
    check_grads(b.module, args={"h": np.array([1.0, 2.0, 3.0]), "t": t})
    grad = rlx.grad_with_loss(b.module, "f")
    _, dh = rlx.compile(b.module, grad.sym_name.data)(
        np.array([1, 2, 3], np.float32), t, np.float32(1.0))
    want = t ** 3 if as_bcast else np.full(3, np.prod(t))  # d/dh of c * t + 1, 3 times
    np.testing.assert_allclose(dh, want)


CALL_IN_SCAN = """
func.func private @helper(%s: tensor<f32>) -> tensor<f32> {
  %t = rlx.tanh %s : (tensor<f32>) -> tensor<f32>
  func.return %t : tensor<f32>
}
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %0 = rlx.scan %x {length = 3 : i64} : (tensor<f32>) -> tensor<f32> ({
  ^bb0(%1: tensor<f32>):
    %2 = func.call @helper(%1) : (tensor<f32>) -> tensor<f32>
    rlx.yield %2 : (tensor<f32>) -> ()
  })
  func.return %0 : tensor<f32>
}
"""


def test_a_call_inside_a_scan_body_is_interpreted_and_compiled():
    """The interpreter finds the callee of a call nested in a region body (it ran the body
    without the module: an AttributeError), and agrees with the native code."""
    want = np.float32(0.3)
    for _ in range(3):
        want = np.tanh(want)
    got = rlx.interpret(CALL_IN_SCAN, np.float32(0.3), entry="main")[0]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(rlx.compile(CALL_IN_SCAN, entry="main")(np.float32(0.3))[0],
                               want, rtol=1e-6)
