"""Gradient checking: the emitted VJP against central finite differences, in float64.

>>> import rlx_mlir as rlx
>>> b = rlx.Builder("f")
>>> x = b.param("x", (3,))
>>> b.ret(b.tanh(x) * x)
>>> report = check_grads(b.module)   # raises AssertionError when a gradient is off
>>> report.ok
True

The module is promoted to f64 (every ``f32`` tensor becomes ``f64``), its
gradient function is built by the autodiff pass (or taken from the module when
``@f_grad`` is already there), and both run on the numpy interpreter. Like
JAX's ``check_vjp``, the loss cotangent is random, so non-scalar outputs are
checked too: ``<ct, J v>`` (finite differences) against ``<vjp(ct), v>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from rlx_mlir.interpreter import run_func
from rlx_mlir.ir import as_module, find_func, parse, to_text
from rlx_mlir.runtime.signature import Arg, Signature
from rlx_mlir.transforms.autodiff import (
    GradOptions,
    build_grad_func,
    differentiable_funcs,
    resolve_wrt,
)

_F32_TENSOR = re.compile(r"tensor<((?:\d+x)*)f32>")


def promote_to_f64(module: ModuleOp | str) -> ModuleOp:
    """A copy of ``module`` with every f32 tensor (values and constants) made f64."""
    text = module if isinstance(module, str) else to_text(module)
    return parse(_F32_TENSOR.sub(r"tensor<\1f64>", text))


@dataclass
class ArgReport:
    name: str
    max_rel_error: float
    checks: int


@dataclass
class GradReport:
    func: str
    args: list[ArgReport] = field(default_factory=list)
    rtol: float = 1e-6

    @property
    def ok(self) -> bool:
        return all(a.max_rel_error <= self.rtol for a in self.args)

    def __str__(self) -> str:
        lines = [f"check-grads @{self.func}: {'OK' if self.ok else 'FAILED'}"]
        for a in self.args:
            verdict = "ok" if a.max_rel_error <= self.rtol else f"OFF (> {self.rtol:g})"
            lines.append(f"  d/d{a.name}: max relative error {a.max_rel_error:.3e} "
                         f"over {a.checks} checks: {verdict}")
        return "\n".join(lines)


def random_args(sig: Signature, rng: np.random.Generator, int_high: int) -> dict[str, np.ndarray]:
    def one(a: Arg) -> np.ndarray:
        if a.dtype.kind == "f":
            return rng.standard_normal(a.shape).astype(a.dtype)
        if a.dtype.kind == "b":
            return rng.integers(0, 2, a.shape).astype(bool)
        return rng.integers(0, int_high, a.shape).astype(a.dtype)

    return {a.name: one(a) for a in sig.args}


def check_grads(module: ModuleOp | str, func_name: str | None = None,
                wrt: Sequence[str] | None = None, args: Mapping[str, np.ndarray] | None = None,
                *, seed: int = 0, eps: float = 1e-4, rtol: float = 1e-6,
                int_high: int = 2, max_elementwise: int = 48, directions: int = 4,
                raise_on_error: bool = True) -> GradReport:
    """Check the gradient of ``func_name`` (default: first differentiable function)."""
    m64 = promote_to_f64(as_module(module) if isinstance(module, str) else module)
    f = find_func(m64, func_name) if func_name else differentiable_funcs(m64, None)[0]
    grad_f = build_grad_func(f, GradOptions(tuple(wrt) if wrt else None))
    m64.body.block.add_op(grad_f)
    wrt_indices = resolve_wrt(f, wrt)
    report = _check(m64, f, grad_f, wrt_indices, args, seed, eps, int_high,
                    max_elementwise, directions)
    report.rtol = rtol
    if raise_on_error and not report.ok:
        raise AssertionError(str(report))
    return report


def _check(module: ModuleOp, f: func.FuncOp, grad_f: func.FuncOp, wrt: list[int],
           given: Mapping[str, np.ndarray] | None, seed: int, eps: float, int_high: int,
           max_elementwise: int, directions: int) -> GradReport:
    rng = np.random.default_rng(seed)
    sig = Signature.of(f)
    values = random_args(sig, rng, int_high)
    for name, value in (given or {}).items():
        values[name] = np.asarray(value, dtype=np.float64 if np.asarray(value).dtype.kind == "f"
                                  else np.asarray(value).dtype)
    arrays = [values[a.name] for a in sig.args]
    loss_shape = tuple(Signature.of(f).results[0].get_shape())
    cotangent = rng.standard_normal(loss_shape)
    outs = run_func(module, grad_f, [*arrays, cotangent])
    n_grads = len(wrt)
    grads = outs[len(outs) - n_grads:]

    def outputs(xs: list[np.ndarray]) -> np.ndarray:
        return run_func(module, f, xs)[0]

    report = GradReport(f.sym_name.data)
    for index, grad in zip(wrt, grads, strict=True):
        errors = [_directional_error(outputs, cotangent, arrays, index, v, grad, eps)
                  for v in _probe_directions(arrays[index].shape, rng, max_elementwise,
                                             directions)]
        report.args.append(ArgReport(sig.args[index].name, max(errors), len(errors)))
    return report


def _probe_directions(shape: tuple[int, ...], rng: np.random.Generator, max_elementwise: int,
                      directions: int) -> list[np.ndarray]:
    """Unit vectors for small arguments (every element), random directions otherwise."""
    size = int(np.prod(shape))
    if size <= max_elementwise:
        return [np.eye(size)[i].reshape(shape) for i in range(size)]
    return [rng.standard_normal(shape) for _ in range(directions)]


def _directional_error(outputs, cotangent: np.ndarray, arrays: list[np.ndarray], index: int,
                       v: np.ndarray, grad: np.ndarray, eps: float) -> float:
    """Relative error of ``<grad, v>`` against a Richardson-extrapolated central difference
    of ``<cotangent, f(x + h v)>`` (differences are taken per element before the sum)."""

    def central(h: float) -> float:
        plus, minus = list(arrays), list(arrays)
        plus[index] = arrays[index] + h * v
        minus[index] = arrays[index] - h * v
        return float(np.sum(cotangent * (outputs(plus) - outputs(minus)))) / (2 * h)

    numeric = (4 * central(eps / 2) - central(eps)) / 3
    analytic = float(np.sum(grad * v))
    # Below the finite differences' rounding noise no relative comparison is meaningful.
    noise = 1e-13 * float(np.sum(np.abs(cotangent * outputs(arrays)))) / eps
    floor = 1e-6 * float(np.linalg.norm(grad)) * float(np.linalg.norm(v)) + noise + 1e-14
    return abs(numeric - analytic) / max(abs(numeric), abs(analytic), floor)


def check_jvp(module: ModuleOp | str, func_name: str | None = None,
              wrt: Sequence[str] | None = None, args: Mapping[str, np.ndarray] | None = None,
              *, seed: int = 0, eps: float = 1e-4, rtol: float = 1e-6, int_high: int = 2,
              raise_on_error: bool = True) -> GradReport:
    """Check the ``--jvp`` function of ``func_name``: its tangent outputs against a
    Richardson-extrapolated central difference along random tangents, in f64."""
    from rlx_mlir.transforms.jvp import JvpOptions, build_jvp_func

    m64 = promote_to_f64(as_module(module) if isinstance(module, str) else module)
    f = find_func(m64, func_name) if func_name else differentiable_funcs(m64, None)[0]
    jvp_f = build_jvp_func(f, JvpOptions(tuple(wrt) if wrt else None))
    m64.body.block.add_op(jvp_f)
    wrt_indices = resolve_wrt(f, wrt)
    rng = np.random.default_rng(seed)
    sig = Signature.of(f)
    values = random_args(sig, rng, int_high)
    values.update({k: np.asarray(v) for k, v in (args or {}).items()})
    arrays = [values[a.name] for a in sig.args]
    tangents = [rng.standard_normal(arrays[i].shape) for i in wrt_indices]
    outs = run_func(m64, jvp_f, [*arrays, *tangents])
    n = len(outs) // 2

    def shifted(h: float) -> list[np.ndarray]:
        xs = list(arrays)
        for i, t in zip(wrt_indices, tangents, strict=True):
            xs[i] = arrays[i] + h * t
        return run_func(m64, f, xs)

    report = GradReport(f.sym_name.data, rtol=rtol)
    for k in range(n):
        def central(h: float, k: int = k) -> np.ndarray:
            return (shifted(h)[k] - shifted(-h)[k]) / (2 * h)

        numeric = (4 * central(eps / 2) - central(eps)) / 3
        analytic = outs[n + k]
        scale = max(float(np.linalg.norm(numeric)), float(np.linalg.norm(analytic)), 1e-12)
        noise = 1e-13 * float(np.sum(np.abs(run_func(m64, f, arrays)[k]))) / eps
        error = float(np.linalg.norm(numeric - analytic)) / max(scale, noise)
        report.args.append(ArgReport(f"out{k}", error, 1))
    if raise_on_error and not report.ok:
        raise AssertionError(str(report).replace("d/dout", "tangent of out"))
    return report
