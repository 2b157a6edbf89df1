"""Gradient checking: the emitted VJP against central finite differences, in float64.

>>> import rlx_mlir as rlx
>>> b = rlx.Builder("f")
>>> x = b.param("x", (3,))
>>> b.ret(b.tanh(x) * x)
>>> report = check_grads(b.module)   # raises AssertionError when a gradient is off
>>> report.ok
True

The module is promoted to f64 (every ``f32`` tensor becomes ``f64``). The gradient
checked is the module's own gradient function of ``@f`` (``rlx.grad_of = "f"``, e.g. a
hand-written or earlier ``@f_grad``; ``grad=`` names one) when there is one, else the one
the autodiff pass builds; both run on the numpy interpreter. Like
JAX's ``check_vjp``, the loss cotangent is random, so non-scalar outputs are
checked too: ``<ct, J v>`` (finite differences) against ``<vjp(ct), v>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.traits import SymbolTable

from rlx_mlir.diagnostics import RlxError
from rlx_mlir.dialects.base import is_real_float
from rlx_mlir.interpreter import run_func
from rlx_mlir.ir import as_module, find_func, parse, to_text
from rlx_mlir.runtime.signature import Arg, Signature, arg_names
from rlx_mlir.transforms.autodiff import (
    GradOptions,
    build_grad_func,
    differentiable_funcs,
    resolve_wrt,
)

_F32_TENSOR = re.compile(r"tensor<((?:\d+x)*)(f32|bf16|f16|complex<f32>)>")


def promote_to_f64(module: ModuleOp | str) -> ModuleOp:
    """A copy of ``module`` with every f32, f16 and bf16 tensor (values and constants)
    made f64 (c64: c128); the ops keep the source locations of ``module``'s (an error
    names the user's file)."""
    text = module if isinstance(module, str) else to_text(module)
    promoted = parse(_F32_TENSOR.sub(
        lambda m: f"tensor<{m[1]}{'complex<f64>' if m[2].startswith('complex') else 'f64'}>",
        text))
    if not isinstance(module, str):
        pairs = list(zip(module.walk(), promoted.walk(), strict=False))
        if all(a.name == b.name for a, b in pairs):
            for source, copy in pairs:
                copy.location = source.location
    return promoted


@dataclass
class ArgReport:
    name: str
    max_rel_error: float
    checks: int
    unchecked: str | None = None  # why finite differences cannot check this gradient


@dataclass
class GradReport:
    func: str
    args: list[ArgReport] = field(default_factory=list)
    rtol: float = 1e-6
    grad: str | None = None  # the module's gradient function checked, if any

    @property
    def ok(self) -> bool:
        return all(a.max_rel_error <= self.rtol for a in self.args if a.unchecked is None)

    def __str__(self) -> str:
        checked = f" (checked @{self.grad})" if self.grad else ""
        lines = [f"check-grads @{self.func}: {'OK' if self.ok else 'FAILED'}{checked}"]
        for a in self.args:
            if a.unchecked is not None:
                lines.append(f"  d/d{a.name}: not checked: {a.unchecked}")
                continue
            verdict = "ok" if a.max_rel_error <= self.rtol else f"OFF (> {self.rtol:g})"
            lines.append(f"  d/d{a.name}: max relative error {a.max_rel_error:.3e} "
                         f"over {a.checks} checks: {verdict}")
        return "\n".join(lines)


def random_args(sig: Signature, rng: np.random.Generator, int_high: int) -> dict[str, np.ndarray]:
    def one(a: Arg) -> np.ndarray:
        if a.dtype.kind == "c" or is_real_float(a.dtype):
            return _normal(rng, a.shape, a.dtype)
        if a.dtype.kind == "b":
            return rng.integers(0, 2, a.shape).astype(bool)
        return rng.integers(0, int_high, a.shape).astype(a.dtype)

    return {a.name: one(a) for a in sig.args}


def check_grads(module: ModuleOp | str, func_name: str | None = None,
                wrt: Sequence[str] | None = None, args: Mapping[str, np.ndarray] | None = None,
                *, seed: int = 0, eps: float = 1e-4, rtol: float = 1e-6,
                int_high: int = 2, max_elementwise: int = 48, directions: int = 4,
                raise_on_error: bool = True, grad: str | None = None) -> GradReport:
    """Check the gradient of ``func_name`` (default: first differentiable function).

    ``grad`` names the gradient function to check (default: the module's gradient of
    ``func_name`` for ``wrt``, else the one ``--autodiff`` emits)."""
    source = as_module(module)
    f, g = _targets(source, func_name, wrt, grad)
    for checked in (f, g):
        _check_interpretable(checked)
    wrt_indices = grad_wrt(f, g) if g is not None else resolve_wrt(f, wrt)
    m64 = promote_to_f64(source)
    f64 = find_func(m64, f.sym_name.data)
    if g is None:
        grad_f = build_grad_func(f64, GradOptions(tuple(wrt) if wrt else None))
        m64.body.block.add_op(grad_f)
    else:
        grad_f = find_func(m64, g.sym_name.data)
    report = _check(m64, f64, grad_f, wrt_indices, args, seed, eps, int_high,
                    max_elementwise, directions)
    report.rtol, report.grad = rtol, g.sym_name.data if g is not None else None
    if raise_on_error and not report.ok:
        raise AssertionError(str(report))
    return report


def _check_interpretable(f: func.FuncOp | None) -> None:
    """Gradients are checked on rlx ops (the interpreter's): lowered IR is an error at its
    first op of another dialect."""
    if f is None:
        return
    for op in f.walk():
        if not op.name.startswith(("rlx.", "func.")):
            raise RlxError(f"gradient checks run on rlx ops, before --lower-to-linalg: "
                           f"@{f.sym_name.data} holds '{op.name}'", op=op)


def _targets(module: ModuleOp, func_name: str | None, wrt: Sequence[str] | None,
             grad: str | None) -> tuple[func.FuncOp, func.FuncOp | None]:
    """The differentiated function and the module's gradient function to check (or None)."""
    if grad is None:
        f = find_func(module, func_name) if func_name else differentiable_funcs(module, None)[0]
        return f, _existing_grad(module, f, wrt)
    g = find_func(module, grad)
    f = grad_target(module, g)
    if func_name is not None and func_name != f.sym_name.data:
        raise RlxError(f"@{grad} is the gradient of @{f.sym_name.data}, not of @{func_name}",
                       op=g)
    if wrt is not None and list(wrt) != _wrt_names(f, g):
        raise RlxError(f"@{grad} differentiates with respect to "
                       f"{_names(f, grad_wrt(f, g))}, not {', '.join(wrt)}", op=g)
    return f, g


def _existing_grad(module: ModuleOp, f: func.FuncOp,
                   wrt: Sequence[str] | None) -> func.FuncOp | None:
    """The module's first gradient function of ``f`` (for ``wrt`` when given)."""
    for g in module.body.block.ops:
        mark = g.attributes.get("rlx.grad_of") if isinstance(g, func.FuncOp) else None
        if (isinstance(mark, StringAttr) and mark.data == f.sym_name.data
                and (wrt is None or list(wrt) == _wrt_names(f, g))):
            return g
    return None


def grad_target(module: ModuleOp, g: func.FuncOp) -> func.FuncOp:
    """The function ``g`` is the gradient of (its ``rlx.grad_of``)."""
    target = g.attributes.get("rlx.grad_of")
    if not isinstance(target, StringAttr):
        raise RlxError(f"@{g.sym_name.data} has no rlx.grad_of = \"<function>\" attribute",
                       op=g)
    f = SymbolTable.lookup_symbol(module, target.data)
    if not isinstance(f, func.FuncOp):
        raise RlxError(f"@{g.sym_name.data} is marked rlx.grad_of = \"{target.data}\" but "
                       f"the module has no function @{target.data}", op=g)
    return f


def grad_wrt(f: func.FuncOp, g: func.FuncOp) -> list[int]:
    """The arguments of ``f`` that ``g`` differentiates (``rlx.wrt``), its signature checked."""
    attr = g.attributes.get("rlx.wrt")
    if attr is not None and not (isinstance(attr, ArrayAttr)
                                 and all(isinstance(a, StringAttr) for a in attr.data)):
        raise RlxError(f"@{g.sym_name.data}: rlx.wrt must be an array of argument names, got "
                       f"{attr}", op=g)
    wrt = resolve_wrt(f, [a.data for a in attr.data] if attr is not None else None)
    _check_grad_signature(f, g, wrt)
    return wrt


def _check_grad_signature(f: func.FuncOp, g: func.FuncOp, wrt: list[int]) -> None:
    """``g`` takes ``(f's arguments..., loss cotangent)`` and ends with one gradient per
    ``wrt`` argument, like ``--autodiff``'s ``@f_grad``."""
    inputs, outputs = list(f.function_type.inputs.data), list(f.function_type.outputs.data)
    if not outputs:
        raise RlxError(f"@{f.sym_name.data} has no result to differentiate", op=f)
    takes, gives = list(g.function_type.inputs.data), list(g.function_type.outputs.data)
    want = [inputs[i] for i in wrt]
    name, of = g.sym_name.data, f.sym_name.data
    if takes != [*inputs, outputs[0]]:
        raise RlxError(f"@{name} must take the arguments of @{of} and then the loss "
                       f"cotangent ({_types([*inputs, outputs[0]])}), got ({_types(takes)})",
                       op=g)
    if len(gives) < len(want) or gives[len(gives) - len(want):] != want:
        raise RlxError(f"@{name} must end its results with the gradients of "
                       f"{_names(f, wrt)} ({_types(want)}), got ({_types(gives)})", op=g)


def _wrt_names(f: func.FuncOp, g: func.FuncOp) -> list[str]:
    names = arg_names(f)
    return [names[i] for i in grad_wrt(f, g)]


def _names(f: func.FuncOp, indices: list[int]) -> str:
    names = arg_names(f)
    return ", ".join(names[i] for i in indices) or "no argument"


def _types(types: Sequence[object]) -> str:
    return ", ".join(str(t) for t in types)


def _normal(rng: np.random.Generator, shape: tuple[int, ...],
            dtype: np.dtype | type = np.float64) -> np.ndarray:
    """Standard normal samples; complex ones have independent normal parts."""
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _check(module: ModuleOp, f: func.FuncOp, grad_f: func.FuncOp, wrt: list[int],
           given: Mapping[str, np.ndarray] | None, seed: int, eps: float, int_high: int,
           max_elementwise: int, directions: int) -> GradReport:
    rng = np.random.default_rng(seed)
    sig = Signature.of(f)
    values = random_args(sig, rng, int_high)
    for name, value in (given or {}).items():
        kind = np.asarray(value).dtype.kind
        values[name] = np.asarray(value, dtype={"f": np.float64, "c": np.complex128}.get(
            kind, np.asarray(value).dtype))
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
        surrogate = surrogate_on_path(f, index)
        if surrogate is not None:
            report.args.append(ArgReport(sig.args[index].name, 0.0, 0, surrogate))
            continue
        errors = [_directional_error(outputs, cotangent, arrays, index, v, grad, eps)
                  for v in _probe_directions(arrays[index], rng, max_elementwise,
                                             directions)]
        report.args.append(ArgReport(sig.args[index].name, max(errors), len(errors)))
    return report


def surrogate_on_path(f: func.FuncOp, index: int) -> str | None:
    """Why argument ``index``'s gradient is not ``f``'s derivative (None: it is): it flows
    into an op whose gradient is a surrogate (``rlx.round``'s straight-through).

    >>> surrogate_on_path(f, 0)   # doctest: +SKIP
    "it flows through 'rlx.round' (straight-through: gradient 1, not its derivative 0)"
    """
    tainted: set[SSAValue] = {f.body.blocks[0].args[index]}
    size = -1
    while size != len(tainted):  # to a fixed point: a loop body feeds its carries back
        size = len(tainted)
        for op in f.walk():
            if op is f or not any(v in tainted for v in op.operands):
                continue
            reason = getattr(type(op), "SURROGATE_GRADIENT", None)
            if reason is not None:
                return f"it flows through '{op.name}' ({reason})"
            tainted.update(op.results)
            for block in (b for region in op.regions for b in region.blocks):
                tainted.update(_tainted_block_args(op, block, tainted))
    return None


def _tainted_block_args(op: Operation, block: Block, tainted: set[SSAValue]) -> list[SSAValue]:
    """The arguments of a block of ``op`` that a tainted value reaches: the one bound to
    each tainted operand (all of them when they do not pair up) or yielded back to it."""
    if len(block.args) != len(op.operands):
        return list(block.args)
    yielded = list(block.last_op.operands) if block.last_op is not None else []
    return [arg for i, arg in enumerate(block.args)
            if op.operands[i] in tainted or (i < len(yielded) and yielded[i] in tainted)]


def _probe_directions(x: np.ndarray, rng: np.random.Generator, max_elementwise: int,
                      directions: int) -> list[np.ndarray]:
    """Unit vectors for small arguments (every element, and each element times i for a
    complex one), random directions otherwise."""
    size, units = x.size, (1, 1j) if x.dtype.kind == "c" else (1,)
    if size <= max_elementwise:
        return [u * np.eye(size)[i].reshape(x.shape) for i in range(size) for u in units]
    return [_normal(rng, x.shape, x.dtype) for _ in range(directions)]


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
    # A complex argument's gradient is dL/d conj(z) (SPEC 5.9): dL = 2 Re(conj(g) dz).
    analytic = (2 * float(np.sum(np.conj(grad) * v).real) if np.iscomplexobj(grad)
                else float(np.sum(grad * v)))
    # A directional derivative that both sides put within the finite differences'
    # rounding noise (about 10 ulps of the loss terms over the step) is 0 on both: no
    # relative comparison is meaningful there (a complex argument's directions where the
    # derivative is 0 give numeric values of about 1e-9).
    noise = 10 * np.finfo(np.float64).eps * float(np.sum(np.abs(cotangent * outputs(arrays)))) / eps
    if abs(numeric) <= noise and abs(analytic) <= noise:
        return 0.0
    # Past that, a difference within the noise is forgiven: a small component of a large
    # loss (d/dx tanh(1e-7 x) + 100) was reported OFF by 7e-5 when the analytic value was
    # exact, its difference all rounding.
    floor = 1e-6 * float(np.linalg.norm(grad)) * float(np.linalg.norm(v)) + 1e-14
    return max(0.0, abs(numeric - analytic) - noise) / max(abs(numeric), abs(analytic), floor)


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
    tangents = [_normal(rng, arrays[i].shape, arrays[i].dtype) for i in wrt_indices]
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
