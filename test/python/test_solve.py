"""The solve family: interpreter against torch.linalg.solve, singular systems, the
implicit-function VJP against closed forms and finite differences, the JIT's LU against
the interpreter, and backward-Euler scans whose step is a solve (SPEC 2.2.1, 2.2.2, 5.5,
8, 9.25)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import rlx_mlir as rlx
from rlx_mlir.dialects.solve import solve_or_nan
from rlx_mlir.runtime.jit import compile as jit_compile
from rlx_mlir.testing import check_grads
from rlx_mlir.transforms.autodiff import grad_with_loss

NP = {"f32": np.float32, "f64": np.float64}
RTOL = {"f32": 1e-5, "f64": 1e-10}
# (op, A shape, B shape): one and several right-hand sides, single and batched.
CASES = [
    ("dense_solve", (4, 4), (4,)),
    ("dense_solve", (4, 4), (4, 3)),
    ("batched_dense_solve", (3, 4, 4), (3, 4)),
    ("batched_dense_solve", (3, 4, 4), (3, 4, 2)),
]




def well_conditioned(shape, dtype, rng) -> np.ndarray:
    """Random matrices made diagonally dominant (condition number ~ 1-3)."""
    n = shape[-1]
    return (rng.standard_normal(shape) + 2.0 * np.sqrt(n) * np.eye(n)).astype(NP[dtype])


def solve_module(op: str, a_shape, b_shape, dtype: str, loss: bool = False):
    """``x = <op>(A, B)`` (or ``sum(x)`` with ``loss``), A and B parameters."""
    b = rlx.Builder("f")
    a_, b_ = b.param("A", a_shape, dtype), b.param("B", b_shape, dtype)
    x = b.emit(op, a_, b_)
    b.ret(b.reduce_sum(x, axes=list(range(len(b_shape)))) if loss else x)
    return b.module


def inputs(a_shape, b_shape, dtype, rng):
    return well_conditioned(a_shape, dtype, rng), rng.standard_normal(b_shape).astype(NP[dtype])


# ---------------------------------------------------------------- interpreter


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op,a_shape,b_shape", CASES)
def test_interpreter_matches_torch(op, a_shape, b_shape, dtype, rng):
    a, b = inputs(a_shape, b_shape, dtype, rng)
    (x,) = rlx.interpret(solve_module(op, a_shape, b_shape, dtype), a, b)
    want = torch.linalg.solve(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert x.dtype == NP[dtype] and x.shape == b_shape
    np.testing.assert_allclose(x, want, rtol=RTOL[dtype] * 10, atol=RTOL[dtype])
    np.testing.assert_allclose(np.einsum("...ij,...j->...i", a, x) if x.ndim < a.ndim
                               else a @ x, b, rtol=1e-4, atol=1e-4)


def test_dense_solve_f64_end_to_end():
    a, b = np.array([[2.0, 1.0], [1.0, 3.0]]), np.array([5.0, 10.0])
    (x,) = rlx.interpret(solve_module("dense_solve", (2, 2), (2,), "f64"), a, b)
    np.testing.assert_array_equal(x, [1.0, 3.0])


def test_dense_solve_f64_5x5_laplacian():
    lap = 2 * np.eye(5) - np.eye(5, k=1) - np.eye(5, k=-1)
    want = np.arange(1.0, 6.0)
    (x,) = rlx.interpret(solve_module("dense_solve", (5, 5), (5,), "f64"), lap, lap @ want)
    np.testing.assert_allclose(x, want, rtol=1e-13)


def test_dense_solve_f64_multi_rhs_forward(rng):
    a = well_conditioned((5, 5), "f64", rng)
    want = rng.standard_normal((5, 3))
    (x,) = rlx.interpret(solve_module("dense_solve", (5, 5), (5, 3), "f64"), a, a @ want)
    np.testing.assert_allclose(x, want, rtol=1e-12, atol=1e-13)


def test_singular_gives_nan_per_slice():
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]])
    b = np.array([[1.0, 1.0], [5.0, 10.0]])
    (x,) = rlx.interpret(solve_module("batched_dense_solve", (2, 2, 2), (2, 2), "f64"), a, b)
    assert np.isnan(x[0]).all()
    np.testing.assert_allclose(x[1], [1.0, 3.0])
    assert np.isnan(solve_or_nan(np.zeros((3, 3), np.float32), np.ones((3, 2), np.float32))).all()


# ---------------------------------------------------------------- VJP


def grads(module, *arrays):
    grad_with_loss(module, "f")
    return rlx.interpret(module, *arrays, np.float64(1.0), entry="f_grad")


def test_hello_resistor_gradient_end_to_end():
    """loss = sum(solve(A, b)): db = A^-T 1, dA = -db x^T; also finite differences."""
    a = np.array([[3.0, -1.0, 0.0], [-1.0, 3.0, -1.0], [0.0, -1.0, 2.0]])
    b = np.array([1.0, 0.0, 2.0])
    loss, da, db = grads(solve_module("dense_solve", (3, 3), (3,), "f64", loss=True), a, b)
    x = np.linalg.solve(a, b)
    want_db = np.linalg.solve(a.T, np.ones(3))
    np.testing.assert_allclose(loss, x.sum(), rtol=1e-14)
    np.testing.assert_allclose(db, want_db, rtol=1e-13)
    np.testing.assert_allclose(da, -np.outer(want_db, x), rtol=1e-13)
    check_grads(solve_module("dense_solve", (3, 3), (3,), "f64", loss=True),
                args={"A": a, "B": b})


def test_dense_solve_f64_multi_rhs_gradient(rng):
    a, b = inputs((4, 4), (4, 3), "f64", rng)
    _, da, db = grads(solve_module("dense_solve", (4, 4), (4, 3), "f64", loss=True), a, b)
    x = np.linalg.solve(a, b)
    want_db = np.linalg.solve(a.T, np.ones((4, 3)))
    np.testing.assert_allclose(db, want_db, rtol=1e-12)
    np.testing.assert_allclose(da, -want_db @ x.T, rtol=1e-12)


@pytest.mark.parametrize("b_shape", [(3, 4), (3, 4, 2)])
def test_batched_dense_solve_gradient_matches_per_batch_analytic(b_shape, rng):
    a, b = inputs((3, 4, 4), b_shape, "f64", rng)
    module = solve_module("batched_dense_solve", (3, 4, 4), b_shape, "f64", loss=True)
    _, da, db = grads(module, a, b)
    for i in range(3):
        x = np.linalg.solve(a[i], b[i])
        want_db = np.linalg.solve(a[i].T, np.ones(b_shape[1:]))
        np.testing.assert_allclose(db[i], want_db, rtol=1e-12)
        np.testing.assert_allclose(da[i], -np.outer(want_db, x) if x.ndim == 1
                                   else -want_db @ x.T, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("op,a_shape,b_shape", CASES)
def test_check_grads(op, a_shape, b_shape, rng):
    """Non-scalar output: JAX-style random cotangent, every element of A and B probed."""
    a, b = inputs(a_shape, b_shape, "f64", rng)
    report = check_grads(solve_module(op, a_shape, b_shape, "f32"), args={"A": a, "B": b})
    assert [r.name for r in report.args] == ["A", "B"]


# ---------------------------------------------------------------- JIT


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("op,a_shape,b_shape", CASES)
def test_jit_matches_interpreter(op, a_shape, b_shape, dtype, rng):
    module = solve_module(op, a_shape, b_shape, dtype)
    a, b = inputs(a_shape, b_shape, dtype, rng)
    (got,), (want,) = jit_compile(module)(a, b), rlx.interpret(module, a, b)
    assert got.dtype == NP[dtype] and got.shape == b_shape
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=RTOL[dtype])


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 7), k=st.integers(0, 3), seed=st.integers(0, 2**16),
       dtype=st.sampled_from(["f32", "f64"]))
def test_jit_pivoting_random_sizes(n, k, seed, dtype):
    """General (not diagonally dominant) matrices need the row swaps; k = 0 is rank-1 B."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)).astype(NP[dtype])
    if np.linalg.cond(a) > 50:
        a += (3 * np.sqrt(n) * np.eye(n)).astype(NP[dtype])
    b_shape = (n, k) if k else (n,)
    b = rng.standard_normal(b_shape).astype(NP[dtype])
    module = solve_module("dense_solve", (n, n), b_shape, dtype)
    (got,), (want,) = jit_compile(module)(a, b), rlx.interpret(module, a, b)
    np.testing.assert_allclose(got, want, rtol=10 * RTOL[dtype], atol=10 * RTOL[dtype])


def test_jit_singular_matches_interpreter_nan():
    """Exactly singular slices (rank 1; a zero row) are NaN in both; the regular one is not."""
    module = solve_module("batched_dense_solve", (3, 3, 3), (3, 3, 2), "f64")
    zero_row = np.diag([1.0, 2.0, 0.0]) + np.eye(3, k=1)
    a = np.stack([np.ones((3, 3)), 2 * np.eye(3), zero_row])
    b = np.ones((3, 3, 2))
    (got,), (want,) = jit_compile(module)(a, b), rlx.interpret(module, a, b)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[0]).all() and np.isnan(got[2]).all()
    np.testing.assert_array_equal(got[1], 0.5 * b[1])


def test_jit_leaves_inputs_untouched(rng):
    module = solve_module("dense_solve", (4, 4), (4, 2), "f64")
    a, b = inputs((4, 4), (4, 2), "f64", rng)
    a0, b0 = a.copy(), b.copy()
    jit_compile(module)(a, b)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


def test_jit_gradient_function(rng):
    """The whole gradient function (transpose, solve, reshape, matmul, neg) compiled."""
    module = solve_module("dense_solve", (3, 3), (3,), "f64", loss=True)
    grad_with_loss(module, "f")
    a, b = inputs((3, 3), (3,), "f64", rng)
    args = (a, b, np.float64(1.0))
    got = jit_compile(module, entry="f_grad")(*args)
    want = rlx.interpret(module, *args, entry="f_grad")
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10)


# ---------------------------------------------------------------- backward-Euler scans

DT, STEPS = 0.1, 6


def heat_module(n: int = 5, loss: bool = False):
    """x <- solve(I + dt L, x) for STEPS steps, L the 1-D Dirichlet Laplacian (SPD)."""
    b = rlx.Builder("f")
    x0 = b.param("x0", (n,), "f64")
    m = b.param("M", (n, n), "f64")
    x = b.scan(x0, lambda s, c, mat: s.dense_solve(mat, c), length=STEPS, bcasts=[m])
    b.ret(b.reduce_sum(x * x, axes=[0]) if loss else x)
    return b.module


def heat_matrix(n: int = 5) -> np.ndarray:
    lap = (2 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)) * (n + 1) ** 2
    return np.eye(n) + DT * lap


def test_scan_backward_euler_heat_f64():
    m, x0 = heat_matrix(), np.sin(np.pi * np.arange(1, 6) / 6)
    want = x0.copy()
    for _ in range(STEPS):
        want = np.linalg.solve(m, want)
    (x,) = rlx.interpret(heat_module(), x0, m)
    np.testing.assert_allclose(x, want, rtol=1e-13)
    assert np.all(np.abs(x) < np.abs(x0))  # the heat decays


def test_scan_backward_euler_gradient_matches_fd():
    report = check_grads(heat_module(loss=True), args={"M": heat_matrix()})
    assert [r.name for r in report.args] == ["x0", "M"]


def drive_module(n: int = 3):
    """scan_with_xs_be_with_drive: c <- solve(M, c + xs[t])."""
    b = rlx.Builder("f")
    c0, m = b.param("c0", (n,), "f64"), b.param("M", (n, n), "f64")
    xs = b.param("xs", (STEPS, n), "f64")
    b.ret(b.scan(c0, lambda s, c, mat, x: s.dense_solve(mat, c + x), length=STEPS,
                 xs=[xs], bcasts=[m]))
    return b.module


def test_scan_with_xs_be_with_drive(rng):
    m, c0, xs = heat_matrix(3), rng.standard_normal(3), rng.standard_normal((STEPS, 3))
    want = c0
    for t in range(STEPS):
        want = np.linalg.solve(m, want + xs[t])
    (got,) = rlx.interpret(drive_module(), c0, m, xs)
    np.testing.assert_allclose(got, want, rtol=1e-13)
    report = check_grads(drive_module(), args={"M": m})
    assert [r.name for r in report.args] == ["c0", "M", "xs"]


def test_scan_backward_euler_jit(rng):
    """The scan lowering (another family) with a solve in its body."""
    module, m = drive_module(), heat_matrix(3)
    args = (rng.standard_normal(3), m, rng.standard_normal((STEPS, 3)))
    (got,), (want,) = jit_compile(module)(*args), rlx.interpret(module, *args)
    np.testing.assert_allclose(got, want, rtol=1e-12)


# ---------------------------------------------------------------- JVP and vmap


def jvp_of(module, wrt: list[str], *arrays):
    """(primal, tangent) of ``f`` at ``arrays`` (primals, then one tangent per ``wrt``)."""
    rlx.jvp(module, "f", wrt)
    return rlx.interpret(module, *arrays, entry="f_jvp")


@pytest.mark.parametrize("op,a_shape,b_shape", CASES)
def test_jvp_matches_finite_differences(op, a_shape, b_shape, rng):
    """jvp_dense_solve_{a,b}_runs_and_matches_fd: t_X = solve(A, t_B - t_A X)."""
    a, b = inputs(a_shape, b_shape, "f64", rng)
    ta, tb = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    x, tx = jvp_of(solve_module(op, a_shape, b_shape, "f64"), ["A", "B"], a, b, ta, tb)
    h = 1e-6
    fd = (solve_or_nan(a + h * ta, b + h * tb) - solve_or_nan(a - h * ta, b - h * tb)) / (2 * h)
    np.testing.assert_allclose(x, solve_or_nan(a, b), rtol=1e-12)
    np.testing.assert_allclose(tx, fd, rtol=1e-6, atol=1e-8)


def test_dense_solve_f64_multi_rhs_jvp(rng):
    """Tangent in B only: t_X = solve(A, t_B)."""
    a, b = inputs((4, 4), (4, 3), "f64", rng)
    tb = rng.standard_normal((4, 3))
    _, tx = jvp_of(solve_module("dense_solve", (4, 4), (4, 3), "f64"), ["B"], a, b, tb)
    np.testing.assert_allclose(tx, np.linalg.solve(a, tb), rtol=1e-12)


@pytest.mark.parametrize("op,a_shape,b_shape", CASES)
@pytest.mark.parametrize("names", [["B"], ["A", "B"], ["A"]])
def test_vmap_dense_solve_matches_scalar_runs(op, a_shape, b_shape, names, rng):
    module = solve_module(op, a_shape, b_shape, "f64")
    g = rlx.vmap(module, "f", names, 3)
    if names == ["B"] and op == "dense_solve" and len(b_shape) == 1:  # one solve, 3 columns
        assert "batched_dense_solve" not in str(g) and "tensor<4x3xf64>" in str(g)
    a = well_conditioned((3, *a_shape) if "A" in names else a_shape, "f64", rng)
    b = rng.standard_normal((3, *b_shape) if "B" in names else b_shape)
    (got,) = rlx.interpret(module, a, b, entry="f_vmap")
    for i in range(3):
        (want,) = rlx.interpret(module, a[i] if "A" in names else a,
                                b[i] if "B" in names else b, entry="f")
        np.testing.assert_allclose(got[i], want, rtol=1e-12)


def test_scan_trajectory_backward_euler_records_waveform():
    """Row t of the trajectory is the state after step t+1; the last row is the final state."""
    b = rlx.Builder("f")
    x0, mat = b.input("x0", (5,), "f64"), b.input("M", (5, 5), "f64")
    b.ret(b.scan(x0, lambda s, c, m: s.dense_solve(m, c), length=STEPS, bcasts=[mat],
                 save_trajectory=True))
    m, x = heat_matrix(), np.sin(np.pi * np.arange(1, 6) / 6)
    rows = []
    for _ in range(STEPS):
        x = np.linalg.solve(m, x)
        rows.append(x)
    for run in (lambda: rlx.interpret(b.module, np.sin(np.pi * np.arange(1, 6) / 6), m),
                lambda: rlx.compile(b.module)(np.sin(np.pi * np.arange(1, 6) / 6), m)):
        (traj,) = run()
        np.testing.assert_allclose(traj, np.stack(rows), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_solves_match_numpy_and_torch_gradients(dtype):
    """c64/c128 solves (LU pivoting by |re| + |im|, as LAPACK's zgetrf), single, several
    right-hand sides and batched; the gradient of a real loss is the conjugate-convention
    one (half of torch's .grad, SPEC 5.9); jvp and vmap; a singular slice gives NaN."""
    import torch

    rng = np.random.default_rng(7)

    def c(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)

    tol = 2e-5 if dtype == np.complex64 else 1e-12
    a, b, bs, ab, bb = c(5, 5), c(5), c(5, 3), c(2, 4, 4), c(2, 4)
    solve = rlx.jit(rlx.nn.solve)
    for lhs, rhs, want in ((a, b, np.linalg.solve(a, b)), (a, bs, np.linalg.solve(a, bs)),
                           (ab, bb[..., None], np.linalg.solve(ab, bb[..., None]))):
        got = solve(lhs, rhs)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * 10)

    def loss(a, b):
        return rlx.nn.complex_norm_sq(rlx.nn.solve(a, b)).sum()

    ga, gb = rlx.jit(rlx.grad(loss, argnums=(0, 1)))(a, b)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (torch.linalg.solve(ta, tb).abs() ** 2).sum().backward()
    np.testing.assert_allclose(ga, ta.grad.numpy() / 2, rtol=1e-3, atol=tol * 100)
    np.testing.assert_allclose(gb, tb.grad.numpy() / 2, rtol=1e-3, atol=tol * 100)
    ta_, tb_ = c(5, 5), c(5)
    _, tangent = rlx.jvp(rlx.nn.solve, (a, b), (ta_, tb_))
    x = np.linalg.solve(a, b)
    np.testing.assert_allclose(tangent, np.linalg.solve(a, tb_ - ta_ @ x), rtol=1e-3, atol=tol * 100)
    batched = rlx.vmap(rlx.nn.solve, in_axes=(None, 0))(a, np.stack([b, 2 * b]))
    np.testing.assert_allclose(batched[1], 2 * x, rtol=1e-3, atol=tol * 100)
    singular = np.stack([np.ones((4, 4), dtype), ab[1]])
    out = solve(singular, bb[..., None])
    assert np.isnan(out[0]).all() and np.isfinite(out[1]).all()


def test_solve_follows_numpy2_batching():
    """numpy 2 / JAX's rule: ``b`` is one right-hand side only when 1-d (then shared by
    every matrix of a batch), else ``[..., N, K]``; batch dims broadcast."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((3, 3, 3)) + 3 * np.eye(3)
    for lhs, rhs in ((a, rng.standard_normal((3, 3))), (a, rng.standard_normal(3)),
                     (a[0], rng.standard_normal((2, 3, 4))),
                     (a[:, None], rng.standard_normal((2, 3, 2)))):
        got = rlx.jit(rlx.nn.solve)(lhs, rhs)
        want = np.linalg.solve(lhs, rhs)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    with pytest.raises(rlx.RlxError, match=r"the batch dims of a \[3, 3, 3\] and b \[2, 3, 1\]"):
        rlx.jit(rlx.nn.solve)(a, np.ones((2, 3, 1)))
