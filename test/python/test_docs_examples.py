"""The examples of the user docs run as written and compute what their text says.

* Every ```python block of ``DOCS`` (README.md has test_readme.py) runs in a temporary
  directory. The blocks of a file in ``CONTINUED`` (its text continues one block in the
  next) run in order in one namespace; the others each in a fresh one. What a block
  computes, prints or states in a comment is checked (``CHECKS``): values against numpy,
  finite differences or the reference interpreter (never by matching printed numbers).
  A block preceded by ``<!-- not-run: reason -->`` on the line before its fence (JAX or
  PyTorch code shown for comparison) is only compiled. Rules a block registers are
  unregistered after it.
* The examples column of api.md's table of transformations runs on the names its first
  block defines, each checked (``TABLE_CHECKS``).
* The shell blocks that run ``rlx-opt`` / ``rlx-run`` on a module written in the docs
  (``SHELL_INPUTS``) run as subprocesses: exit 0 and the key output of each command.
  autodiff.md's worked example prints the ``@mul_add_grad`` the doc shows.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir import rules
from rlx_mlir.dialects.base import ShapeError, tensor
from rlx_mlir.dialects.elementwise import MulOp
from rlx_mlir.dialects.nn import SoftmaxOp

DOCS = Path(__file__).resolve().parents[2] / "docs"
FILES = ("getting-started.md", "api.md", "autodiff.md", "jvp-vmap.md", "cli.md",
         "comparison.md", "developing.md")
CONTINUED = {"getting-started.md", "comparison.md", "developing.md"}
SHELL_INPUTS = {"getting-started.md": "model.mlir"}  # the name of its first ```mlir block
FENCE = re.compile(r"(?:<!-- not-run: (?P<why>[^>]*?) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)```",
                   re.S)
SHELLS = ("sh", "bash", "console")
BIN = Path(sys.executable).parent

Scope = dict[str, Any]


@dataclass(frozen=True)
class Block:
    file: str
    index: int  # among the file's python blocks
    code: str
    not_run: str | None

    def __str__(self) -> str:
        return f"{self.file}:python{self.index}"


def fences(file: str, langs: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """(code, not-run reason) of the file's fenced blocks in ``langs``, in order."""
    text = (DOCS / file).read_text()
    return [(m["code"], m["why"]) for m in FENCE.finditer(text) if m["lang"] in langs]


def python_blocks() -> list[Block]:
    return [Block(f, i, code, why) for f in FILES
            for i, (code, why) in enumerate(fences(f, ("python",)))]


PY_BLOCKS = python_blocks()


def run(block: Block, scope: Scope) -> None:
    # dont_inherit: the block runs as a user's script would, without this file's
    # `from __future__ import annotations`
    exec(compile(block.code, f"{DOCS / block.file} ({block})", "exec", dont_inherit=True),
         scope)


def preceding(block: Block) -> list[Block]:
    """The runnable blocks a block of a continued file builds on."""
    if block.file not in CONTINUED:
        return []
    return [b for b in PY_BLOCKS if b.file == block.file and b.index < block.index
            and b.not_run is None]


# ---------------------------------------------------------------- numpy references


def softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(z - z.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    return float(-np.log(softmax(logits))[np.arange(len(labels)), labels].mean())


def cross_entropy_grad(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """d mean cross-entropy / d logits."""
    return (softmax(logits) - np.eye(logits.shape[1])[labels]) / len(labels)


def fd_grad(fn: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central differences of ``fn`` at ``x``, in float64."""
    x = x.astype(np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        d = np.zeros_like(x)
        d[i] = eps
        g[i] = (fn(x + d) - fn(x - d)) / (2 * eps)
    return g


def close(got: Any, want: Any, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol)


# ---------------------------------------------------------------- checks of python blocks


def check_first_jit(ns: Scope, tmp: Path, out: str) -> None:
    p, x, labels = ns["params"], ns["x"].astype(np.float64), ns["labels"]
    w, b = p["w"].astype(np.float64), p["b"].astype(np.float64)

    def loss(w: np.ndarray, b: np.ndarray) -> float:
        return cross_entropy(np.maximum(x @ w + b, 0), labels)

    assert ns["probs"].shape == (2, 3)
    close(ns["probs"], softmax(np.maximum(x @ w + b, 0)))
    close(ns["loss"], loss(w, b))
    assert set(ns["grads"]) == {"w", "b"}
    close(ns["grads"]["w"], fd_grad(lambda w: loss(w, b), w))
    close(ns["grads"]["b"], fd_grad(lambda b: loss(w, b), b))
    assert "func.func @loss_fn_grad(" in out


def check_view(ns: Scope, tmp: Path, out: str) -> None:
    assert "rlx.softmax_cross_entropy" in (tmp / "loss.svg").read_text()
    assert (tmp / "grad.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def scan_loss(w: np.ndarray, h0: np.ndarray, xs: np.ndarray) -> float:
    """api.md's scan + cond loss in numpy."""
    h, hs = h0, []
    for x in xs:
        h = np.tanh(h @ w + x)
        hs.append(h)
    h = h * 2.0 if h.sum() > 0 else -h
    return float(h.sum() + (np.array(hs) ** 2).sum())


def check_scan_grad(ns: Scope, tmp: Path, out: str) -> None:
    w, h0, xs = ns["w"], ns["h0"].astype(np.float64), ns["xs"].astype(np.float64)
    close(ns["dw"], fd_grad(lambda w: scan_loss(w, h0, xs), w), 1e-4)


def check_vjp_rule(ns: Scope, tmp: Path, out: str) -> None:
    assert rules.VJP.get(MulOp) is ns["_vjp_mul"]
    b = rlx.Builder("f")
    a, c = b.param("a", (4, 3)), b.param("c", (3,))
    b.ret(b.reduce_sum(a * c, axes=[0, 1]))
    rlx.grad_with_loss(b.module)
    av, cv = np.random.default_rng(0).standard_normal((2, 4, 3), np.float32)
    _, da, dc = rlx.interpret(b.module, entry="f_grad", a=av, c=cv[0], d_output=np.float32(1))
    close(da, np.broadcast_to(cv[0], (4, 3)))
    close(dc, av.sum(0))


def check_jvp_rule(ns: Scope, tmp: Path, out: str) -> None:
    assert rules.JVP.get(MulOp) is ns["_jvp_mul"]
    b = rlx.Builder("f")
    a, c = b.input("a", (4, 3)), b.input("c", (3,))
    b.ret(a * c)
    rlx.jvp(b.module, "f")
    av, ta = np.random.default_rng(0).standard_normal((2, 4, 3), np.float32)
    cv, tc = np.random.default_rng(1).standard_normal((2, 3), np.float32)
    y, ty = rlx.interpret(b.module, av, cv, ta, tc, entry="f_jvp")
    close(y, av * cv)
    close(ty, ta * cv + av * tc)


def check_vmap_rules(ns: Scope, tmp: Path, out: str) -> None:
    assert rules.VMAP.get(SoftmaxOp) is ns["_vmap_softmax"]
    b = rlx.Builder("f")
    x, c = b.input("x", (4, 3)), b.input("c", (3,))
    b.ret(b.softmax(x * c, axis=0))
    rlx.vmap(b.module, "f", ["x"], 2)
    xv = np.random.default_rng(0).standard_normal((2, 4, 3), np.float32)
    cv = np.arange(3, dtype=np.float32)
    (y,) = rlx.interpret(b.module, x=xv, c=cv, entry="f_vmap")
    close(y, softmax(xv * cv, axis=1))


def check_training_step(ns: Scope, tmp: Path, out: str) -> None:
    g, x, y = ns["g"], ns["x"].astype(np.float64), ns["y"]
    old = {k: v + 0.1 * g[k] for k, v in ns["params"].items()}
    close(old["w"], 0.0)  # the doc starts at zero weights
    close(ns["loss"], np.log(10))
    dlogits = cross_entropy_grad(x @ old["w"] + old["b"], y)
    close(g["w"], x.T @ dlogits)
    close(g["b"], dlogits.sum(0))


def check_built_module(ns: Scope, tmp: Path, out: str) -> None:
    assert "func.func @mlp_loss_grad(" in out
    assert "func.func @mlp_loss_grad(" in rlx.to_text(ns["module"])


def check_run_natively(ns: Scope, tmp: Path, out: str) -> None:
    i = {k: v.astype(np.float64) if v.dtype == np.float32 else v
         for k, v in ns["inputs"].items()}
    logits = i["x"] @ i["w"] + i["b"]
    dlogits = cross_entropy_grad(logits, i["labels"])
    close(ns["loss"], cross_entropy(logits, i["labels"]))
    close(ns["dw"], i["x"].T @ dlogits)
    close(ns["db"], dlogits.sum(0))
    for got, want in zip((ns["loss"], ns["dw"], ns["db"]), ns["ref"], strict=True):
        close(got, want)


def check_traced_custom_vjp(ns: Scope, tmp: Path, out: str) -> None:
    close(ns["dx"], [1.0, 1.0, 1.0])


def check_softplus_rule(ns: Scope, tmp: Path, out: str) -> None:
    close(ns["dx"], 1 / (1 + np.exp(-np.array([0.0, 2.0]))))


def check_custom_vjp(ns: Scope, tmp: Path, out: str) -> None:
    close(ns["loss"], 9.0)
    close(ns["dx"], [1.0, 1.0, 1.0])


def check_builder_scan(ns: Scope, tmp: Path, out: str) -> None:
    rng = np.random.default_rng(0)
    h0, xs, w = (rng.standard_normal(s, np.float32) for s in [(3,), (ns["T"], 3), (3, 3)])
    h = h0.astype(np.float64)
    for x in xs:
        h = np.tanh(h @ w + x)
    (got,) = rlx.interpret(ns["b"].module, h0=h0, xs=xs, w=w)
    close(got, h)


def check_op_definition(ns: Scope, tmp: Path, out: str) -> None:
    op = ns["SoftmaxOp"]
    t = tensor((4, 8), "f32")
    assert op.infer([t], {"axis": 0}, None) == [t]
    for bad_type, attrs in [(tensor((4, 8), "i32"), {}), (t, {"axis": 2})]:
        with pytest.raises(ShapeError):
            op.infer([bad_type], attrs, None)


def check_interpreter_rule(ns: Scope, tmp: Path, out: str) -> None:
    assert rules.INTERPRET.get(ns["SoftmaxOp"]) is ns["_interpret_softmax"]
    x = np.random.default_rng(0).standard_normal((4, 8))
    stub = SimpleNamespace(attr=lambda name, default: 0 if name == "axis" else default)
    close(ns["_interpret_softmax"](stub, x), softmax(x, axis=0))


def check_random_keys(ns: Scope, tmp: Path, out: str) -> None:
    """Half the dropout mask is zeros; the kept entries are scaled noisy ones."""
    first = ns["first"]
    assert 0.2 < (first == 0).mean() < 0.8
    assert np.all(np.abs(first[first != 0] - 2.0) < 1.0)


def check_complex_grad(ns: Scope, tmp: Path, out: str) -> None:
    """rlx's complex gradient is half of PyTorch's ``z.grad``."""
    import torch

    z = torch.tensor(ns["z"], requires_grad=True)
    (z.abs() ** 2).sum().backward()
    np.testing.assert_allclose(2 * ns["g"], z.grad.numpy(), rtol=1e-6)


def check_bf16(ns: Scope, tmp: Path, out: str) -> None:
    """Per-op rounding gives what torch's bf16 eager gives; the gradient keeps w's dtype."""
    import torch

    bf16 = ns["bf16"]
    w = torch.full((4, 3), 0.1, dtype=torch.bfloat16, requires_grad=True)
    x = torch.ones((2, 4), dtype=torch.bfloat16)
    assert ns["y"].dtype == bf16 and ns["g"].dtype == bf16
    np.testing.assert_array_equal(ns["y"].astype(np.float32),
                                  (torch.relu(x @ w) * 3).float().detach().numpy())
    (x @ w).float().sum().backward()
    np.testing.assert_array_equal(ns["g"].astype(np.float32), w.grad.float().numpy())


def check_fft(ns: Scope, tmp: Path, out: str) -> None:
    """The low-pass keeps the 5 Hz tone exactly; its gradient is 2 P(P x) = 2 P x."""
    t, low = ns["t"], ns["low"]
    np.testing.assert_allclose(low, np.sin(2 * np.pi * 5 * t), atol=1e-5)
    np.testing.assert_allclose(ns["g"], 2 * low, atol=1e-5)


def check_quant(ns: Scope, tmp: Path, out: str) -> None:
    """QAT fits y through 15-level weights; int8 levels are round(w / 0.02)."""
    w, x, y = ns["w"], ns["x"], ns["y"]
    wq = ns["rlx"].quant.fake_quantize(w, bits=4, axis=1)
    assert all(len(np.unique(wq[:, c])) <= 15 for c in range(2))
    assert float(((x @ wq - y) ** 2).mean()) < 0.2 * float((y ** 2).mean())
    expected = np.clip(np.sign(w / 0.02) * np.floor(np.abs(w / np.float32(0.02)) + 0.5),
                       -128, 127)
    np.testing.assert_array_equal(ns["q"], expected.astype(np.int8))


def check_moe(ns: Scope, tmp: Path, out: str) -> None:
    """The top-1 MoE layer's loss falls below half its start; the last gradient of the
    experts matches PyTorch's for the same routing."""
    import torch

    assert float(ns["value"]) < 0.5 * float(ns["first"])
    p, x, target = ns["params"], ns["x"], ns["target"]
    logits = torch.tensor(x) @ torch.tensor(p["router"])
    gate, ids = torch.softmax(logits, -1).max(-1, keepdim=True)
    experts = torch.tensor(p["experts"], requires_grad=True)
    y = torch.einsum("mk,mkn->mn", torch.tensor(x), experts[ids[:, 0]]) * gate
    ((y - torch.tensor(target)) ** 2).mean().backward()
    _, grads = ns["step"](p, x)
    np.testing.assert_allclose(grads["experts"], experts.grad.numpy(), rtol=1e-4, atol=1e-6)


Check = Callable[[Scope, Path, str], None]
CHECKS: dict[str, Check] = {
    "getting-started.md:python0": check_first_jit,
    "getting-started.md:python1": check_view,
    "api.md:python1": check_scan_grad,
    "api.md:python2": check_softplus_rule,
    "api.md:python3": check_random_keys,
    "api.md:python4": check_complex_grad,
    "api.md:python5": check_fft,
    "api.md:python6": check_quant,
    "api.md:python7": check_bf16,
    "api.md:python8": check_moe,
    "autodiff.md:python0": check_vjp_rule,
    "jvp-vmap.md:python0": check_jvp_rule,
    "jvp-vmap.md:python1": check_vmap_rules,
    "comparison.md:python1": check_training_step,
    "comparison.md:python2": check_built_module,
    "comparison.md:python3": check_run_natively,
    "comparison.md:python5": check_traced_custom_vjp,
    "comparison.md:python6": check_custom_vjp,
    "comparison.md:python8": check_builder_scan,
    "developing.md:python0": check_op_definition,
    "developing.md:python1": check_interpreter_rule,
}
NO_CLAIM = {"api.md:python0"}  # names for api.md's table, checked by test_api_table_example


@pytest.fixture
def isolated_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rules registered by a block (the rule examples) are dropped after it."""
    for registry in vars(rules).values():
        if isinstance(registry, rules.Registry):
            monkeypatch.setattr(registry, "_rules", dict(registry._rules))


@pytest.mark.usefixtures("isolated_rules")
@pytest.mark.parametrize("block", PY_BLOCKS, ids=str)
def test_python_block(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:
    compile(block.code, str(block), "exec", dont_inherit=True)
    if block.not_run is not None:
        return  # another library's code (JAX, PyTorch) shown for comparison: syntax only
    monkeypatch.chdir(tmp_path)
    scope: Scope = {"__name__": "docs_example"}
    for earlier in preceding(block):
        run(earlier, scope)
    capsys.readouterr()
    run(block, scope)
    if str(block) not in NO_CLAIM:
        CHECKS[str(block)](scope, tmp_path, capsys.readouterr().out)


def test_every_runnable_block_is_checked() -> None:
    runnable = {str(b) for b in PY_BLOCKS if b.not_run is None}
    assert runnable == set(CHECKS) | NO_CLAIM


# ---------------------------------------------------------------- api.md's table


def table_examples() -> list[tuple[str, str | None]]:
    """(example, claimed value) of each row of api.md's table of transformations."""
    text = (DOCS / "api.md").read_text().split("## Transformations of Python functions")[1]
    rows = [line for line in text.split("\n\n")[1].splitlines() if line.startswith("| `")]
    out = []
    for row in rows:
        cell = row.rstrip(" |").rsplit(" | ", 1)[1]
        code = re.findall(r"`([^`]+)`", cell)
        out.append((code[0], code[1] if "->" in cell else None))
    return out


def check_traced_text(text: str, ns: Scope) -> None:
    assert "rlx.param" in text
    rlx.parse(text)


def tanh_jacobian(ns: Scope) -> np.ndarray:
    x, w = ns["x"], ns["params"]["w"]
    s = 1 - np.tanh(x @ w) ** 2  # [4, 2]
    return np.einsum("ij,ik,jl->ijkl", s, x, np.eye(w.shape[1]))


TABLE = table_examples()
TableCheck = Callable[[Any, Scope], None]
TABLE_CHECKS: dict[str, TableCheck] = {
    "rlx.jit(f)(params, x)": lambda r, ns: None,  # the claimed 24.0
    'rlx.grad(f)(params, x)["w"]': lambda r, ns: close(r, np.full((3, 2), 4.0)),
    "loss, g = rlx.value_and_grad(f)(params, x)":
        lambda r, ns: (close(ns["loss"], 24.0), close(ns["g"]["b"], [4.0, 4.0])),
    'rlx.jacrev(lambda p, x: rlx.nn.tanh(x @ p["w"]))(params, x)["w"]':
        lambda r, ns: close(r, tanh_jacobian(ns)),
    "rlx.hessian(lambda x: (x ** 3).sum())(x)":
        lambda r, ns: close(r, np.diag(6 * ns["x"].ravel()).reshape(4, 3, 4, 3)),
    'rlx.tree_map(lambda p, g: p - 0.1 * g, params, rlx.grad(f)(params, x))["w"]':
        lambda r, ns: close(r, ns["params"]["w"] - 0.4),
    'rlx.vmap(f, in_axes=({"w": None, "b": 0}, 0), out_axes=-1)(params, xs)':
        lambda r, ns: close(r, [24.0, 24.0]),
    'y, pull = rlx.vjp(lambda w: x @ w, params["w"]); (dw,) = pull(np.ones_like(y))':
        lambda r, ns: close(ns["dw"], np.repeat(ns["x"].sum(axis=0)[:, None], 2, axis=1)),
    "rlx.jvp(rlx.nn.tanh, (x,), (np.ones_like(x),))":
        lambda r, ns: (close(r[0], np.tanh(ns["x"])), close(r[1], 1 - np.tanh(ns["x"]) ** 2)),
    "rlx.trace(f, (params, x), params=[0]).as_text()": check_traced_text,
}


def test_api_table_lists_the_checked_examples() -> None:
    assert [code for code, _ in TABLE] == list(TABLE_CHECKS)


def evaluate(example: str, scope: Scope) -> Any:
    """The value of an expression example; None for a statement (its names are in scope)."""
    try:
        code = compile(example, "api.md", "eval", dont_inherit=True)
    except SyntaxError:
        exec(compile(example, "api.md", "exec", dont_inherit=True), scope)
        return None
    return eval(code, scope)


@pytest.mark.parametrize(("example", "claim"), TABLE,
                         ids=[f"api.md:table{i}" for i in range(len(TABLE))])
def test_api_table_example(example: str, claim: str | None, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    scope: Scope = {"__name__": "docs_example"}
    run(next(b for b in PY_BLOCKS if str(b) == "api.md:python0"), scope)
    result = evaluate(example, scope)
    if claim is not None:
        close(result, float(claim))
    TABLE_CHECKS[example](result, scope)


# ---------------------------------------------------------------- shell examples


def shell_commands(file: str) -> list[list[str]]:
    """The rlx-opt / rlx-run commands of each runnable shell block of ``file``."""
    blocks = []
    for code, why in fences(file, SHELLS):
        lines = [line.removeprefix("$ ") for line in code.splitlines()]
        commands = [line for line in lines if line.startswith(("rlx-opt ", "rlx-run "))]
        if commands and why is None:
            blocks.append(commands)
    return blocks


SHELL_BLOCKS = [(f, i, cmds) for f in FILES for i, cmds in enumerate(shell_commands(f))]


def tool(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run one documented command (no shell: its ``# comment`` is dropped)."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(shlex.split(command, comments=True), cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def check_command(command: str, proc: subprocess.CompletedProcess[str], cwd: Path) -> None:
    """The key output of a documented rlx-opt / rlx-run command."""
    assert proc.returncode == 0, f"{command}\n{proc.stderr}"
    out = proc.stdout
    if view := re.search(r"view-graph(?:=|\{path=)([^ }']+)", command):
        assert (cwd / view[1]).stat().st_size > 0
        assert f"view-graph: wrote {view[1]}" in proc.stderr
    elif "--check-grads" in command:
        assert re.search(r"check-grads @\w+: OK", out), out
    elif "--lower-to-llvm" in command:
        assert "llvm.func" in out
    elif target := re.search(r" -o (\S+)", command):
        assert "rlx.grad_of" in (cwd / target[1]).read_text()
    elif command.startswith("rlx-run"):
        assert re.search(r"^result 0: tensor<", out, re.M), out
    else:
        assert re.search(r"func\.func @\w+_grad\(", out), out


def result_numbers(out: str) -> np.ndarray:
    body = "\n".join(line for line in out.splitlines() if not line.startswith("result "))
    return np.array(re.findall(r"-?\d+\.\d+", body), np.float64)


@pytest.mark.parametrize(("file", "index", "commands"), SHELL_BLOCKS,
                         ids=[f"{f}:sh{i}" for f, i, _ in SHELL_BLOCKS])
def test_shell_block(file: str, index: int, commands: list[str], tmp_path: Path) -> None:
    (tmp_path / SHELL_INPUTS[file]).write_text(fences(file, ("mlir",))[0][0])
    runs: dict[tuple[str, ...], str] = {}
    for command in commands:
        proc = tool(command, tmp_path)
        check_command(command, proc, tmp_path)
        runs[tuple(shlex.split(command, comments=True))] = proc.stdout
    for argv, out in runs.items():  # the interpreter and the native code agree
        if argv[0] == "rlx-run" and "--interpret" in argv:
            native = runs[tuple(a for a in argv if a != "--interpret")]
            close(result_numbers(out), result_numbers(native), 2e-6)


def test_autodiff_worked_example(tmp_path: Path) -> None:
    """`rlx-opt mul_add.mlir --autodiff` prints the doc's @mul_add_grad (its `...` and
    `//` comments aside), and its gradient passes --check-grads."""
    text = (DOCS / "autodiff.md").read_text()
    assert "`rlx-opt mul_add.mlir --autodiff` adds:" in text
    source, shown = (code for code, _ in fences("autodiff.md", ("mlir",)))
    (tmp_path / "mul_add.mlir").write_text(source)
    proc = tool("rlx-opt mul_add.mlir --autodiff", tmp_path)
    check_command("rlx-opt mul_add.mlir --autodiff", proc, tmp_path)
    printed = " ".join(proc.stdout.split())
    for line in shown.splitlines():
        line = " ".join(line.split("//")[0].split())
        if "..." not in line:
            assert line in printed, line
    proc = tool("rlx-opt mul_add.mlir --autodiff --check-grads", tmp_path)
    check_command("rlx-opt mul_add.mlir --autodiff --check-grads", proc, tmp_path)
