"""Differential tests against PyTorch: rlx (natively compiled, and the numpy interpreter)
against torch (a float64 reference computed from the same f32 inputs), outputs and
gradients, on randomized but seeded cases. This file holds the shared helpers and the
matmul / reduction / elementwise / shape families and bad-input errors; the conv,
attention, nn and random-program families are in test_differential_torch_{conv,
attention,nn,programs}.py.

Every case is ``rlx_fn(*arrays)`` next to ``torch_fn(*tensors)`` (one output or a tuple:
several cases share one compile). The gradient checked is that of ``sum(out * ct)`` for a
fixed random cotangent ``ct`` per output (so every output element's gradient counts),
w.r.t. the float arguments listed in ``wrt``. Where SPEC's convention is not torch's
(docs/comparison.md) the tests follow SPEC and say so: tie gradients of maximum / minimum, an
all-ignored cross-entropy mean, causal alignment when S != S_kv.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

import rlx_mlir as rlx

# ---------------------------------------------------------------- helpers


def _as_np(t) -> np.ndarray:
    return t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)


def assert_close(got, want, *, rtol: float = 1e-4, atol: float = 1e-5, scale_atol: bool = True,
                 what: str = "") -> None:
    """``|got - want| <= atol' + rtol |want|`` elementwise, ``atol'`` = ``atol`` times the
    largest ``|want|`` (at least 1) when ``scale_atol``: f32 error grows with magnitudes.
    Shapes must match; NaN / inf positions must agree."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaN positions differ"
    assert np.array_equal(got[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]), \
        f"{what}: inf positions differ"
    if not finite.any():
        return
    mag = float(np.max(np.abs(want[finite]))) if scale_atol else 1.0
    tol = atol * max(mag, 1.0) + rtol * np.abs(want[finite])
    err = np.abs(got[finite].astype(np.float64) - want[finite])
    worst = int(np.argmax(err - tol))
    assert np.all(err <= tol), (
        f"{what}: max |err| {err.max():.3e} (worst at flat {worst}: got "
        f"{got[finite].ravel()[worst]!r}, want {want[finite].ravel()[worst]!r}), "
        f"max |want| {mag:.3e}, {int(np.sum(err > tol))}/{err.size} elements off")


def _flat_leaves(args: Sequence) -> list[np.ndarray]:
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_flat_leaves(a))
        else:
            out.append(np.asarray(a))
    return out


def _outs(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


@dataclass
class Diff:
    """One differential case (or a group of them: ``rlx_fn`` / ``torch_fn`` may return a
    tuple of outputs); see the module docstring."""

    rlx_fn: Callable
    torch_fn: Callable
    args: Sequence[np.ndarray]
    wrt: Sequence[int] = ()
    rtol: float = 1e-4
    atol: float = 1e-5
    grad_rtol: float | None = None
    grad_atol: float | None = None
    interpret: bool = True
    seed: int = 0
    scale_atol: bool = True
    names: Sequence[str] | None = None
    separate: bool = False
    cts: list[np.ndarray] = field(default_factory=list, repr=False)

    def torch_ref(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        ts = []
        for i, a in enumerate(self.args):
            a = np.asarray(a)
            if a.dtype.kind == "f":
                t = torch.tensor(a.astype(np.float64), requires_grad=i in self.wrt)
            else:
                t = torch.tensor(a)
            ts.append(t)
        outs = _outs(self.torch_fn(*ts))
        grads = []
        if self.wrt:
            diffable = [(o, torch.tensor(c.astype(np.float64)))
                        for o, c in zip(outs, self.cts, strict=True) if o.requires_grad]
            grads = torch.autograd.grad([o for o, _ in diffable], [ts[i] for i in self.wrt],
                                        [c for _, c in diffable], allow_unused=True)
            grads = [np.zeros(self.args[i].shape) if g is None else _as_np(g)
                     for i, g in zip(self.wrt, grads, strict=True)]
        return [_as_np(o) for o in outs], grads

    def loss(self, *a):
        outs = _outs(self.rlx_fn(*a[:len(self.args)]))
        total = None
        for o, c in zip(outs, a[len(self.args):], strict=True):
            if o.dtype.startswith("f"):
                term = (o * c).sum()
                total = term if total is None else total + term
        return total

    def _name(self, i: int) -> str:
        return self.names[i] if self.names else f"output {i}"

    def _compare(self, got: list, want: list, what: str) -> None:
        assert len(got) == len(want), f"{what}: {len(got)} outputs, want {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            g = np.asarray(g)
            if g.dtype.kind in "iub":
                np.testing.assert_array_equal(g, w.astype(g.dtype), err_msg=f"{what} {self._name(i)}")
            else:
                assert_close(g, w, rtol=self.rtol, atol=self.atol, scale_atol=self.scale_atol,
                             what=f"{what} {self._name(i)}")

    def _cotangents(self) -> None:
        """A fixed random cotangent per output (shapes from the torch forward)."""
        with torch.no_grad():
            outs = _outs(self.torch_fn(*[torch.tensor(np.asarray(a)) for a in self.args]))
        dtype = next(np.asarray(a).dtype for a in self.args if np.asarray(a).dtype.kind == "f")
        rng = np.random.default_rng(self.seed + 99)
        self.cts = [rng.standard_normal(tuple(o.shape)).astype(dtype) if o.is_floating_point()
                    else np.zeros(tuple(o.shape), dtype) for o in outs]

    def check(self) -> None:
        """Outputs and gradients from ONE compiled function (``jit`` of the outputs and an
        inlined ``grad``), natively and on the interpreter, against torch; with
        ``separate``, the outputs and ``value_and_grad`` compile on their own."""
        self._cotangents()
        want, want_grads = self.torch_ref()
        n, wrt = len(self.args), tuple(self.wrt)
        grtol = self.grad_rtol if self.grad_rtol is not None else self.rtol
        gatol = self.grad_atol if self.grad_atol is not None else self.atol

        def compare_grads(grads, what):
            assert len(grads) == len(wrt)
            for i, g, w in zip(wrt, grads, want_grads, strict=True):
                assert_close(g, w, rtol=grtol, atol=gatol, scale_atol=self.scale_atol,
                             what=f"{what} d/darg{i}")

        if wrt and not self.separate:
            def both(*a):
                return self.rlx_fn(*a[:n]), rlx.grad(self.loss, argnums=wrt)(*a)

            args = [*self.args, *self.cts]
            fn = rlx.jit(both)
            got, grads = fn(*args)
            self._compare(_outs(got), want, "native forward")
            compare_grads(grads, "native")
            if self.interpret:
                traced = fn.lower(*args)
                ref = rlx.interpret(traced.module, *_flat_leaves(args), entry=traced.name)
                self._compare(list(ref[:len(want)]), want, "interpreter forward")
                compare_grads(ref[len(want):], "interpreter")
            return
        fwd = rlx.jit(self.rlx_fn)
        self._compare(_outs(fwd(*self.args)), want, "native forward")
        if self.interpret:
            traced = fwd.lower(*self.args)
            ref = rlx.interpret(traced.module, *_flat_leaves(self.args), entry=traced.name)
            self._compare(list(ref), want, "interpreter forward")
        if not wrt:
            return
        args = [*self.args, *self.cts]
        vg = rlx.value_and_grad(self.loss, argnums=wrt)
        value, grads = vg(*args)
        pairs = [(w, c) for w, c in zip(want, self.cts, strict=True) if w.dtype.kind == "f"]
        loss_want = sum(float(np.sum(w * c.astype(np.float64))) for w, c in pairs)
        loss_scale = sum(float(np.abs(w * c).sum()) for w, c in pairs)
        assert_close(value, loss_want, rtol=grtol, atol=gatol * max(1.0, loss_scale),
                     scale_atol=False, what="loss")
        compare_grads(grads, "native")
        if self.interpret:
            traced = vg.lower(*args)
            leaves = [*_flat_leaves(args), np.ones((), np.asarray(value).dtype)]
            compare_grads(rlx.interpret(traced.module, *leaves, entry=traced.name + "_grad")[1:],
                          "interpreter")


def randn(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.standard_normal(shape)).astype(np.float32)


# ---------------------------------------------------------------- matmul

MATMUL_SHAPES = [(1, 1, 1), (3, 5, 7), (17, 33, 65), (2, 1, 9), (64, 3, 1), (31, 64, 17),
                 (129, 65, 33), (513, 257, 129)]
LAYOUTS = ["nn", "tn", "nt", "tt"]


@pytest.mark.parametrize("m,k,n", MATMUL_SHAPES, ids=str)
def test_matmul_every_operand_layout(m, k, n):
    """``a @ b`` with each operand transposed or not (4 products, one compile), M, K, N
    not multiples of the tile sizes."""
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    args = []
    for ta, tb in LAYOUTS:
        args += [randn(rng, *((k, m) if ta == "t" else (m, k))),
                 randn(rng, *((n, k) if tb == "t" else (k, n)))]

    def rf(*xs):
        return tuple((a.mT if ta == "t" else a) @ (b.mT if tb == "t" else b)
                     for (ta, tb), a, b in zip(LAYOUTS, xs[::2], xs[1::2], strict=True))

    def tf(*xs):
        return tuple((a.T if ta == "t" else a) @ (b.T if tb == "t" else b)
                     for (ta, tb), a, b in zip(LAYOUTS, xs[::2], xs[1::2], strict=True))

    Diff(rf, tf, args, wrt=range(8), interpret=m * k * n < 1e6, names=LAYOUTS,
         atol=1e-5 * np.sqrt(k)).check()


def test_batch_matmul_broadcast_and_transposed():
    rng = np.random.default_rng(3)
    pairs = [((3, 5, 7), (3, 7, 4)),            # plain batch
             ((1, 17, 9), (4, 9, 33)),          # broadcast batch on the left
             ((2, 3, 5, 6), (6, 7)),            # batched times a matrix
             ((5, 6), (2, 3, 6, 7)),            # a matrix times batched
             ((2, 1, 4, 65), (1, 3, 65, 5))]    # both broadcast
    args = [randn(rng, *s) for pair in pairs for s in pair]
    args += [randn(rng, 4, 33, 17), randn(rng, 4, 9, 33), randn(rng, 2, 5, 3, 7)]

    def both(lib):
        def fn(*xs):
            outs = [a @ b for a, b in zip(xs[:10:2], xs[1:10:2], strict=True)]
            a, b, c = xs[10:]
            outs.append(a.mT @ b.mT)
            if lib == "torch":
                outs.append(c.permute(0, 2, 1, 3) @ c.permute(0, 2, 3, 1))
            else:
                outs.append(c.transpose(0, 2, 1, 3) @ c.transpose(0, 2, 3, 1))
            return tuple(outs)
        return fn

    Diff(both("rlx"), both("torch"), args, wrt=range(len(args))).check()


@pytest.mark.parametrize("m,k,n", [(64, 64, 64), (513, 257, 129), (4, 1000, 70)], ids=str)
def test_f64_matmul_on_the_packed_schedule(m, k, n):
    """Regression: matmuls big enough for the packed schedule (2mnk >= 2^18) padded their
    panels with an ``f32`` zero whatever the element type, so every such f64 (and integer)
    matmul failed to compile ('transform.structured.pad' op expects a padding value of
    type 'f64')."""
    rng = np.random.default_rng(m + k + n)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    Diff(lambda x, y: (x @ y, x.mT @ x), lambda x, y: (x @ y, x.T @ x), [a, b], wrt=(0, 1),
         rtol=1e-10, atol=1e-12, interpret=False, separate=True).check()


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_matmul_on_the_packed_schedule(dtype):
    rng = np.random.default_rng(6)
    a, b = rng.integers(-9, 9, (64, 96)).astype(dtype), rng.integers(-9, 9, (96, 80)).astype(dtype)
    got = rlx.jit(lambda x, y: x @ y)(a, b)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, a @ b)


# ---------------------------------------------------------------- reductions

RED_AXES = [0, 1, 2, -1, (0, 2), (0, 1), (1, 2), None]


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min", "prod"])
def test_reductions_every_axis_keepdims(kind):
    """``x.<kind>(axis, keepdims)`` for every axis set, with and without keepdims (one
    compile): forward and gradient."""
    rng = np.random.default_rng(11)
    x = randn(rng, 3, 4, 5) + (1.5 if kind == "prod" else 0.0)   # prod: no zero entry
    cases = [(axis, keep) for axis in RED_AXES for keep in (False, True)]

    def rf(t):
        return tuple(getattr(t, kind)(axis=axis, keepdims=keep) for axis, keep in cases)

    def one_torch(t, axis, keep):
        dims = tuple(range(t.ndim)) if axis is None else axis
        if kind in ("sum", "mean"):
            return getattr(t, kind)(dim=dims, keepdim=keep)
        if kind == "prod":
            out = t
            for d in sorted(np.atleast_1d(dims) % t.ndim, reverse=True):
                out = out.prod(dim=int(d), keepdim=keep)
            return out
        return getattr(torch, "amax" if kind == "max" else "amin")(t, dim=dims, keepdim=keep)

    def tf(t):
        return tuple(one_torch(t, axis, keep) for axis, keep in cases)

    Diff(rf, tf, [x], wrt=(0,), names=[f"axis={a} keepdims={k}" for a, k in cases]).check()


def test_reduce_max_ties_split_the_gradient_as_torch_amax_and_the_jvp_do():
    """reduce_max / reduce_min with tied extremes split the cotangent evenly among them,
    as torch's amax and JAX do; the VJP is the transpose of the JVP (jacrev == jacfwd)."""
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], np.float32)
    for kind, want in (("max", [[0, 0.5, 0.5], [0.5, 0, 0.5]]),
                       ("min", [[1, 0, 0], [0, 1, 0]])):
        g = rlx.grad(lambda t, kind=kind: getattr(t, kind)(axis=1).sum())(x)
        tx = torch.tensor(x, requires_grad=True)
        getattr(torch, "a" + kind)(tx, dim=1).sum().backward()
        np.testing.assert_array_equal(g, want)
        np.testing.assert_array_equal(g, tx.grad.numpy())
    row = lambda t: t.max(axis=1)  # noqa: E731
    np.testing.assert_array_equal(rlx.jacrev(row)(x), rlx.jacfwd(row)(x))


def test_argmax_and_argmin_idiom_every_axis():
    """No argmax op: the idiom (first index equal to the max) against torch's argmax."""
    rng = np.random.default_rng(4)
    x = randn(rng, 3, 4, 5)
    x[1, 2, :2] = x[1, 2, 3]       # ties: torch's argmax/argmin return the first index

    def arg(t, axis, best):
        n = t.shape[axis]
        iota = np.arange(n, dtype=np.float32).reshape([n if i == axis else 1 for i in range(3)])
        hit = t == getattr(t, best)(axis=axis, keepdims=True)
        return rlx.nn.where(hit, t * 0.0 + iota, float(n)).min(axis=axis).astype("int32")

    got = rlx.jit(lambda t: tuple(arg(t, a, b) for a in range(3) for b in ("max", "min")))(x)
    tx = torch.tensor(x)
    want = [getattr(tx, "arg" + b)(dim=a).numpy() for a in range(3) for b in ("max", "min")]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_long_sum_and_mean_f32():
    """Long f32 reductions (2^20 + 3 terms; 1023 x 1025 on each axis) against float64."""
    rng = np.random.default_rng(5)
    x = (rng.random((1 << 20) + 3) + 0.5).astype(np.float32)
    rows = x[: 1023 * 1025].reshape(1023, 1025)
    s, m, s0, s1 = rlx.jit(lambda t, r: (t.sum(), t.mean(), r.sum(axis=0), r.sum(axis=1)))(x, rows)
    x64, r64 = x.astype(np.float64), rows.astype(np.float64)
    assert_close(s, x64.sum(), rtol=1e-5, atol=0, what="sum")
    assert_close(m, x64.mean(), rtol=1e-5, atol=0, what="mean")
    assert_close(s0, r64.sum(axis=0), rtol=1e-5, atol=0, what="axis 0")
    assert_close(s1, r64.sum(axis=1), rtol=1e-5, atol=0, what="axis 1")


# ---------------------------------------------------------------- elementwise

UNARY = {
    "exp": (rlx.nn.exp, torch.exp, (-80.0, 80.0)),
    "log": (rlx.nn.log, torch.log, (1e-30, 1e30)),
    "tanh": (rlx.nn.tanh, torch.tanh, (-30.0, 30.0)),
    "sigmoid": (rlx.nn.sigmoid, torch.sigmoid, (-90.0, 90.0)),
    "silu": (rlx.nn.silu, torch.nn.functional.silu, (-90.0, 90.0)),
    "gelu": (rlx.nn.gelu, torch.nn.functional.gelu, (-12.0, 12.0)),
    "gelu_tanh": (lambda t: rlx.nn.gelu(t, approximate=True),
                  lambda t: torch.nn.functional.gelu(t, approximate="tanh"), (-12.0, 12.0)),
    "relu": (rlx.nn.relu, torch.relu, (-5.0, 5.0)),
    "sqrt": (rlx.nn.sqrt, torch.sqrt, (1e-20, 1e20)),
    "abs": (abs, torch.abs, (-3.0, 3.0)),
    "neg_pow": (lambda t: -(t ** 3.0), lambda t: -(t ** 3.0), (-20.0, 20.0)),
}


def _extreme_inputs(lo: float, hi: float, rng) -> np.ndarray:
    """Random values, values near 0 and the ends of the range (log-spaced for positive
    ranges)."""
    if lo > 0:
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), 200))
        x = np.concatenate([x, [lo, hi, 1.0, 0.5, 2.0]])
    else:
        x = np.concatenate([rng.uniform(lo, hi, 150), rng.standard_normal(40) * 1e-3,
                            [lo, hi, 1e-7, -1e-7, lo / 2, hi / 2, -1.0, 1.0, 3.0, -3.0]])
    return x.astype(np.float32)


def test_unary_near_extremes():
    """Each activation over its whole f32 range (tolerances per element, not scaled by
    the largest value: results span many orders of magnitude). The native f32 exp, tanh
    and erf are polynomial approximations (lowering/fastmath.py, ~3e-7 absolute for tanh),
    so values near 0 that come from ``1 + tanh`` cancel to ~1e-5 absolute (as torch f32)."""
    rng = np.random.default_rng(7)
    args = [_extreme_inputs(*UNARY[n][2], rng) for n in UNARY]
    rf = lambda *xs: tuple(UNARY[n][0](x) for n, x in zip(UNARY, xs, strict=True))  # noqa: E731
    tf = lambda *xs: tuple(UNARY[n][1](x) for n, x in zip(UNARY, xs, strict=True))  # noqa: E731
    Diff(rf, tf, args, wrt=range(len(args)), rtol=2e-5, atol=5e-6, grad_rtol=2e-4, grad_atol=2e-5,
         scale_atol=False, names=list(UNARY)).check()


def test_relu_and_abs_at_zero_follow_spec():
    """SPEC (docs/comparison.md): ``abs'(0) = 0``; ``relu'(0) = 0`` as torch."""
    x = np.array([0.0, -0.0, 1.0, -1.0], np.float32)
    g = rlx.grad(lambda t: (abs(t) + rlx.nn.relu(t)).sum())(x)
    np.testing.assert_array_equal(g, [0.0, 0.0, 2.0, -1.0])


def test_log_and_sqrt_at_zero_and_negative_follow_ieee():
    x = np.array([0.0, -0.0, -1.0, np.inf], np.float32)
    lg, sq = rlx.jit(lambda t: (rlx.nn.log(t), rlx.nn.sqrt(t)))(x)
    np.testing.assert_array_equal(lg[[0, 1, 3]], [-np.inf, -np.inf, np.inf])
    assert np.isnan(lg[2]) and np.isnan(sq[2])
    np.testing.assert_array_equal(sq[[0, 3]], [0.0, np.inf])


BROADCAST_SHAPES = [((3, 1, 5), (4, 1)), ((1,), (2, 3)), ((2, 3, 1), (1, 3, 4)),
                    ((5, 1, 1, 2), (3, 1, 2)), ((), (2, 2))]


def test_broadcast_binary_where_clamp():
    rng = np.random.default_rng(12)
    args = []
    for sa, sb in BROADCAST_SHAPES:
        args += [randn(rng, *sa), randn(rng, *sb) + 2.5]

    def one(lib, x, y):
        w, mx, mn = ((torch.where, torch.maximum, torch.minimum) if lib == "torch" else
                     (rlx.nn.where, rlx.nn.maximum, rlx.nn.minimum))
        z = x * y - x / y + (x - y) ** 2
        z = w(x > y, z, mx(x, y) - mn(x * 0.5, y))
        if lib == "torch":
            return torch.clamp(z, -0.75, 1.25)
        return rlx.nn.minimum(rlx.nn.maximum(z, -0.75), 1.25)

    def both(lib):
        return lambda *xs: tuple(one(lib, a, b) for a, b in zip(xs[::2], xs[1::2], strict=True))

    Diff(both("rlx"), both("torch"), args, wrt=range(len(args)),
         names=[str(s) for s in BROADCAST_SHAPES]).check()


def test_where_with_broadcast_condition():
    rng = np.random.default_rng(2)
    a, b = randn(rng, 1, 6), randn(rng, 4, 6)
    c = rng.random((4, 1)) > 0.5
    Diff(lambda x, y, m: rlx.nn.where(m, x * 2.0, y), lambda x, y, m: torch.where(m, x * 2.0, y),
         [a, b, c], wrt=(0, 1)).check()


# ---------------------------------------------------------------- shape ops


def test_concat_slice_transpose_reshape_combos():
    rng = np.random.default_rng(8)
    a, b = randn(rng, 2, 3, 5), randn(rng, 2, 4, 5)
    c, d = randn(rng, 3, 1, 7), randn(rng, 3, 1, 2)
    x = randn(rng, 4, 5, 6)

    def both(lib):
        cat = torch.cat if lib == "torch" else (lambda xs, dim: rlx.nn.concat(xs, axis=dim))

        def fn(a, b, c, d, x):
            z = cat([a, b, a[:, 1:2]], dim=1)                                  # [2, 8, 5]
            z = (z.permute(2, 0, 1) if lib == "torch" else z.transpose(2, 0, 1))[1:4, :, 2:7]
            z = z.reshape(6, 5).T.reshape(5, 3, 2)           # row-major reshape of a transpose
            first = z[:, -1] * 2.0 + z[:, 0]
            second = cat([d, c], dim=-1)[..., 1:8]
            third = x[1, None, ..., 2:5] * x[-1, 3, None, 1:4]
            return first, second, third
        return fn

    Diff(both("rlx"), both("torch"), [a, b, c, d, x], wrt=range(5)).check()


def test_gather_rows_and_gradient():
    rng = np.random.default_rng(1)
    t1, t2, t3 = randn(rng, 7, 3), randn(rng, 5, 2, 3), randn(rng, 9, 4)
    i1 = np.array([0, 6, 3, 3, 1], np.int32)          # duplicates accumulate
    i2 = np.array([[4, 0], [2, 4]], np.int32)         # 2-d ids, rank-3 table
    i3 = np.array([-1, 2, -9], np.int32)              # negative ids count from the end

    def rf(t1, t2, t3, i1, i2, i3):
        return t1[i1], rlx.nn.embedding(t2, i2), t3[i3], rlx.nn.embedding(t1, i1)

    def tf(t1, t2, t3, i1, i2, i3):
        return t1[i1.long()], t2[i2.long()], t3[i3.long()], t1[i1.long()]

    Diff(rf, tf, [t1, t2, t3, i1, i2, i3], wrt=(0, 1, 2)).check()


def test_non_contiguous_numpy_arguments():
    """Strided, transposed and Fortran-ordered arguments are read by value."""
    rng = np.random.default_rng(13)
    base = randn(rng, 6, 8)
    views = [base[:, ::2], base.T, np.asfortranarray(base), base[1:4, 2:7]]
    f = rlx.jit(lambda a, b, c, d: (a * 2.0, b + 1.0, c - 1.0, d * d))
    for got, want in zip(f(*views), [views[0] * 2, views[1] + 1, views[2] - 1, views[3] ** 2],
                         strict=True):
        np.testing.assert_array_equal(got, want)
    run = rlx.compile(rlx.jit(lambda a: a @ a.T).lower(views[1]))
    (got,) = run(views[1])
    assert_close(got, views[1].astype(np.float64) @ views[1].T.astype(np.float64), what="matmul")


# ---------------------------------------------------------------- equal outputs


EQUAL_OUTPUTS = {  # rlx function, numpy reference
    "two_equal_transposes": (lambda t: (t.transpose(1, 0, 2), t.transpose(1, 0, 2)),
                             lambda t: (t.transpose(1, 0, 2),) * 2),
    "two_equal_products": (lambda t: (t * 2.0, t * 2.0), lambda t: (t * 2,) * 2),
    "axis_2_and_minus_1": (lambda t: (t.sum(axis=2), t.sum(axis=-1), t.max(axis=2)),
                           lambda t: (t.sum(2), t.sum(2), t.max(2))),
    "two_equal_constants": (lambda t: (t.sum() * 0.0 + 1.0, t.sum() * 0.0 + 1.0),
                            lambda t: (np.float32(1),) * 2),
    "equal_values_and_an_input": (lambda t: (lambda y: (y, t * 3.0, y, t * 3.0, t))(t * 3.0),
                                  lambda t: (t * 3,) * 4 + (t,)),
}


@pytest.mark.parametrize("pipeline", ["fast", "naive"])
@pytest.mark.parametrize("name", list(EQUAL_OUTPUTS))
def test_structurally_equal_outputs_compile_and_are_right(name, pipeline, monkeypatch):
    """Regression: a function returning two structurally equal results (merged by CSE
    after the runtime's own de-duplication of returned values) returned one buffer twice,
    and upstream's buffer-results-to-out-params pass crashed the process (segfault)."""
    monkeypatch.setenv("RLX_PIPELINE", pipeline)
    x = randn(np.random.default_rng(14), 3, 4, 5)
    fn, ref = EQUAL_OUTPUTS[name]
    got, want = rlx.jit(fn)(x), ref(x)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    for i, g in enumerate(got):                # distinct arrays, none aliasing the input
        assert not np.shares_memory(g, x)
        assert not any(np.shares_memory(g, h) for h in got[i + 1:])


# ---------------------------------------------------------------- bad inputs


def test_compiled_function_rejects_wrong_shape_and_dtype():
    b = rlx.Builder("f")
    x, w = b.input("x", (2, 3)), b.input("w", (3, 4))
    b.ret(x @ w)
    run = rlx.compile(b.module, entry="f")
    good = np.ones((2, 3), np.float32), np.ones((3, 4), np.float32)
    (out,) = run(*good)
    np.testing.assert_array_equal(out, np.full((2, 4), 3.0, np.float32))
    for bad in [(np.ones((3, 2), np.float32), good[1]),        # wrong shape
                (good[0], np.ones((3, 4), np.float64)),        # wrong dtype
                (good[0], np.ones((3, 4), np.int32)),
                (np.ones((2, 3, 1), np.float32), good[1]),      # wrong rank
                (good[0], np.float32(1.0)),                     # a scalar
                (good[0],)]:                                    # missing argument
        with pytest.raises(rlx.RlxError):
            run(*bad)
    with pytest.raises(rlx.RlxError):
        run(x=good[0], w=good[1], z=good[0])                    # unknown keyword


def test_jit_rejects_mismatched_matmul_and_broadcast_shapes():
    with pytest.raises(rlx.RlxError):
        rlx.jit(lambda a, b: a @ b)(np.ones((2, 3), np.float32), np.ones((4, 5), np.float32))
    with pytest.raises(rlx.RlxError):
        rlx.jit(lambda a, b: a + b)(np.ones((2, 3), np.float32), np.ones((4,), np.float32))


def test_complex_argument_times_a_python_float_matches_torch():
    z = (np.arange(6) - 2.5j).reshape(2, 3).astype(np.complex64)
    np.testing.assert_allclose(rlx.jit(lambda t: t * 2.0 + 1)(z),
                               (torch.tensor(z) * 2.0 + 1).numpy(), rtol=1e-6)


def test_string_argument_to_a_compiled_function_is_an_rlx_error():
    b = rlx.Builder("f")
    b.ret(b.input("x", (2, 3)) * 2.0)
    run = rlx.compile(b.module, entry="f")
    with pytest.raises(rlx.RlxError, match="expected dtype float32 .*, got <U3"):
        run("abc")
