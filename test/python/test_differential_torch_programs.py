"""Differential tests against PyTorch on random programs: seeded chains of elementwise
ops with broadcasting, where, reductions (any axes, keepdims), transposes, reshapes,
slices, concats, matmuls and softmax / log_softmax on any axis; outputs and gradients
w.r.t. every input, natively and on the interpreter (helpers in
test_differential_torch.py). They exercise the fusion and scheduling of op mixes that
the per-family tests do not.

Binary ties follow SPEC, not torch: ``maximum`` / ``minimum`` send a tie's whole
gradient to the first operand (SPEC 5.2), which the torch side implements; reduce max /
min split a tie's gradient evenly, as torch's ``amax`` / ``amin`` do (random programs make
ties through ``concat(x, x)``, ``maximum(x, x)``...).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_differential_torch import Diff

import rlx_mlir as rlx

UNARY = ["exp", "tanh", "sigmoid", "relu", "gelu", "silu", "abs", "sqrt", "square", "neg"]
BINARY = ["add", "sub", "mul", "div", "max", "min"]


class _FirstWinsBinary(torch.autograd.Function):
    """maximum / minimum whose tie gradient goes to the first operand (SPEC 5.2)."""

    @staticmethod
    def forward(ctx, x, z, kind):
        y = torch.maximum(x, z) if kind == "max" else torch.minimum(x, z)
        ctx.save_for_backward(x, z, y)
        return y

    @staticmethod
    def backward(ctx, g):
        x, z, y = ctx.saved_tensors
        first = x == y
        return _unbroadcast(g * first, x.shape), _unbroadcast(g * ~first, z.shape), None


def _unbroadcast(t: torch.Tensor, shape) -> torch.Tensor:
    while t.dim() > len(shape):
        t = t.sum(0)
    for i, n in enumerate(shape):
        if n == 1 and t.shape[i] != 1:
            t = t.sum(i, keepdim=True)
    return t


def _broadcast(a, b):
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def generate(seed: int, dims: tuple[int, ...], n_inputs: int = 3, n_ops: int = 16):
    """(input shapes, instructions, output indices) of a random well-shaped program."""
    rng = np.random.default_rng(seed)
    pool = [int(d) for d in rng.choice(dims, 4)]
    shapes = []
    for _ in range(n_inputs):
        rank = int(rng.integers(1, 4))
        start = int(rng.integers(0, 5 - rank))
        shape = tuple(pool[start:start + rank])
        if rng.random() < 0.3:
            shape = tuple(1 if rng.random() < 0.4 else d for d in shape)
        shapes.append(shape)
    inputs, prog = list(shapes), []
    kinds = ["unary", "binary", "binary", "where", "reduce", "transpose", "reshape", "slice",
             "concat", "matmul", "softmax"]
    while len(prog) < n_ops:
        kind = str(rng.choice(kinds))
        i = int(rng.integers(len(shapes)))
        s = shapes[i]
        if kind == "unary":
            prog.append(("unary", i, str(rng.choice(UNARY))))
            shapes.append(s)
        elif kind in ("binary", "where"):
            j = int(rng.integers(len(shapes)))
            out = _broadcast(s, shapes[j])
            if out is None:
                continue
            prog.append((kind, i, j, str(rng.choice(BINARY))))
            shapes.append(out)
        elif kind == "reshape":
            n = int(np.prod(s))
            options = [(n,)] + [(a, n // a) for a in range(1, n + 1) if n % a == 0]
            new = options[int(rng.integers(len(options)))]
            prog.append(("reshape", i, new))
            shapes.append(new)
        elif not s:
            continue
        elif kind == "reduce":
            axes = tuple(sorted(int(a) for a in rng.choice(len(s), int(rng.integers(1, len(s) + 1)),
                                                            replace=False)))
            keep = bool(rng.random() < 0.5)
            prog.append(("reduce", i, str(rng.choice(["sum", "mean", "max", "min"])), axes, keep))
            shapes.append(tuple(1 if d in axes else n for d, n in enumerate(s)) if keep
                          else tuple(n for d, n in enumerate(s) if d not in axes))
        elif kind == "transpose" and len(s) >= 2:
            perm = tuple(int(p) for p in rng.permutation(len(s)))
            prog.append(("transpose", i, perm))
            shapes.append(tuple(s[p] for p in perm))
        elif kind == "slice":
            axis = int(rng.integers(len(s)))
            if s[axis] < 2:
                continue
            a = int(rng.integers(0, s[axis] - 1))
            b = int(rng.integers(a + 1, s[axis] + 1))
            prog.append(("slice", i, axis, a, b))
            shapes.append(tuple(b - a if d == axis else n for d, n in enumerate(s)))
        elif kind == "concat":
            axis = int(rng.integers(len(s)))
            same = [j for j, t in enumerate(shapes) if len(t) == len(s)
                    and all(t[d] == s[d] for d in range(len(s)) if d != axis)]
            j = same[int(rng.integers(len(same)))]
            prog.append(("concat", i, j, axis))
            shapes.append(tuple(n + shapes[j][d] if d == axis else n for d, n in enumerate(s)))
        elif kind == "matmul" and len(s) >= 2:
            ok = [j for j, t in enumerate(shapes) if len(t) >= 2 and t[-2] == s[-1]
                  and _broadcast(s[:-2], t[:-2]) is not None]
            if not ok:
                continue
            j = ok[int(rng.integers(len(ok)))]
            prog.append(("matmul", i, j))
            shapes.append(_broadcast(s[:-2], shapes[j][:-2]) + (s[-2], shapes[j][-1]))
        elif kind == "softmax":
            prog.append(("softmax", i, int(rng.integers(len(s))), bool(rng.random() < 0.5)))
            shapes.append(s)
    return inputs, prog, [len(shapes) - 1, len(shapes) - 2]


def execute(lib: str, prog, outs, xs):
    t = lib == "torch"
    nn = rlx.nn
    unary = {
        "exp": lambda x: (torch.exp(torch.tanh(x)) if t else nn.exp(nn.tanh(x))),
        "tanh": torch.tanh if t else nn.tanh, "sigmoid": torch.sigmoid if t else nn.sigmoid,
        "relu": torch.relu if t else nn.relu,
        "gelu": torch.nn.functional.gelu if t else nn.gelu,
        "silu": torch.nn.functional.silu if t else nn.silu, "abs": abs,
        "sqrt": lambda x: (torch.sqrt if t else nn.sqrt)(abs(x) + 1.0),
        "square": lambda x: x * x, "neg": lambda x: -x,
    }
    vals = list(xs)
    for ins in prog:
        kind, i = ins[0], ins[1]
        x = vals[i]
        if kind == "unary":
            y = unary[ins[2]](x)
        elif kind == "binary":
            z, op = vals[ins[2]], ins[3]
            if op in ("max", "min"):
                y = (_FirstWinsBinary.apply(x, z, op) if t else
                     (nn.maximum if op == "max" else nn.minimum)(x, z))
            else:
                y = {"add": lambda: x + z, "sub": lambda: x - z, "mul": lambda: x * z,
                     "div": lambda: x / (abs(z) + 1.0)}[op]()
        elif kind == "where":
            z = vals[ins[2]]
            y = (torch.where if t else nn.where)(x > z, x * 2.0, z)
        elif kind == "reduce":
            _, _, op, axes, keep = ins
            if op in ("max", "min"):
                y = (getattr(torch, "a" + op)(x, dim=axes, keepdim=keep) if t else
                     getattr(x, op)(axis=axes, keepdims=keep))
            else:
                y = getattr(x, op)(dim=axes, keepdim=keep) if t else getattr(x, op)(axis=axes, keepdims=keep)
        elif kind == "transpose":
            y = x.permute(*ins[2]) if t else x.transpose(*ins[2])
        elif kind == "reshape":
            y = x.reshape(*ins[2])
        elif kind == "slice":
            _, _, axis, a, b = ins
            y = x[(slice(None),) * axis + (slice(a, b),)]
        elif kind == "concat":
            z, axis = vals[ins[2]], ins[3]
            y = torch.cat([x, z], axis) if t else nn.concat([x, z], axis=axis)
        elif kind == "matmul":
            y = x @ vals[ins[2]]
        else:
            _, _, axis, log = ins
            if t:
                y = torch.log_softmax(x, axis) if log else torch.softmax(x, axis)
            else:
                y = nn.log_softmax(x, axis=axis) if log else nn.softmax(x, axis=axis)
        vals.append(y)
    return tuple(vals[o] for o in outs)


SMALL = (1, 2, 3, 5, 7, 16, 17, 33)
LARGE = (1, 3, 16, 31, 64, 65, 129)


@pytest.mark.parametrize("seed,dims", [pytest.param(s, SMALL, id=f"small-{s}") for s in range(12)]
                         + [pytest.param(100 + s, LARGE, id=f"large-{s}") for s in range(3)])
def test_random_program_against_torch(seed, dims):
    inputs, prog, outs = generate(seed, dims)
    rng = np.random.default_rng(seed + 1000)
    xs = [rng.standard_normal(s).astype(np.float32) for s in inputs]
    Diff(lambda *a: execute("rlx", prog, outs, a), lambda *a: execute("torch", prog, outs, a),
         xs, wrt=range(len(xs)), rtol=2e-4, atol=2e-5, interpret=dims is SMALL).check()


def test_spec_tie_rules():
    """The two tie rules the programs' torch side follows, on their own: maximum's tie
    goes to its first operand (SPEC 5.2), reduce max splits one (as torch's amax)."""
    x = np.array([1.0, 2.0, 2.0], np.float32)
    gx, gy = rlx.grad(lambda a, b: rlx.nn.maximum(a, b).sum(), argnums=(0, 1))(x, x.copy())
    np.testing.assert_array_equal(gx, [1, 1, 1])      # the first operand takes it all
    np.testing.assert_array_equal(gy, [0, 0, 0])
    np.testing.assert_array_equal(rlx.grad(lambda a: a.max())(x), [0, 0.5, 0.5])
