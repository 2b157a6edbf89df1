"""Regions that use values defined above them (rlx.if, rlx.while, rlx.custom_fn) through
autodiff, JVP and vmap, against JAX (float64).

The passes' CSE merges a constant inside a region with an identical one above it (and
``--cse`` does the same); each pass then has to map the captured value like an operand.
The modules are the lit inputs of test/control/captures*.mlir; each chain of passes runs
in-process, the result is verified and round-tripped through its text, and the derived
function is evaluated (interpreter, or native code when a region still captures a value:
the interpreter evaluates a region from its block arguments only).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence

import jax
import numpy as np
import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.transforms.common_subexpression_elimination import cse

import rlx_mlir as rlx
from rlx_mlir.ir import find_func, parse, to_text, verify
from rlx_mlir.transforms.autodiff import grad_with_loss, values_from_above
from rlx_mlir.transforms.jvp import jvp
from rlx_mlir.transforms.vmap import vmap

jnp = jax.numpy

CONTROL = pathlib.Path(__file__).resolve().parents[1] / "control"
X = np.array([0.3, -1.2, 2.0])
XS = np.array([[0.3, -1.2, 2.0], [-1.0, 0.4, -0.7]])  # the if predicate differs per row


pytestmark = pytest.mark.usefixtures("jax_x64")  # (conftest.py)


# ---------------------------------------------------------------- JAX references


@jax.custom_vjp
def _square(a):
    return a * a


_square.defvjp(lambda a: (a * a, a), lambda a, g: (g * a * 2.0,))


def ref_customfn(x):
    """@f of captures-customfn.mlir (and of the Python test below), with its vjp."""
    return (jnp.sum(_square(x * 2.0)),)


def ref_customfn_fwd(x):
    """The same without the custom vjp (JAX has no JVP of a custom_vjp; the vjp region
    is the true derivative, so JVP through the fwd region gives the same numbers)."""
    return (jnp.sum((x * 2.0) ** 2),)


def ref_cond(x):
    """@cond of captures.mlir: the then branch captures x * x and 0.5."""
    w = x * x
    return (jnp.sum(jnp.where(jnp.sum(x) > 0, jnp.tanh(x) * w * 0.5, w)),)


def _while(s, cond, body, bound):
    """rlx.while with max_iterations, as a loop of that many masked steps."""
    for _ in range(bound):
        s = jnp.where(cond(s), body(s), s)
    return s


def ref_loop(x):
    """@loop of captures.mlir: the body captures tanh(x)."""
    s = _while(x, lambda s: jnp.sum(s) < 6.0, lambda s: s * 1.5 + jnp.tanh(x), 4)
    return (jnp.sum(s),)


def ref_inline_fn(x):
    """@inline_fn of captures.mlir: custom_fn without derivative regions."""
    return (jnp.sum(x * jnp.sin(x)),)


def ref_gate(x, y):
    """@gate of captures.mlir."""
    g = jnp.where(jnp.sum(x) > 0, jnp.tanh(x) * x * x * 0.5, x * 0.5)
    return (jnp.sum(g * y),)


def ref_vjp_data(x, d):
    """@vjp_data of captures.mlir (its vjp region is the true derivative)."""
    return (jnp.sum(jnp.sin(x * d)),)


def ref_nested(x):
    """@nested of captures.mlir: an if in the while body captures the body's argument."""
    w = jnp.tanh(x)
    s = _while(x, lambda s: jnp.sum(s) < 6.0,
               lambda s: jnp.where(jnp.sum(s) > 0, s * w + s, s - w), 3)
    return (jnp.sum(s),)


def ref_c_cond(x):
    """@cond of captures-cse.mlir."""
    a = x * 0.5
    y = jnp.where(jnp.sum(x) > 0, jnp.tanh(a) * 0.5, a * a)
    return (jnp.sum(y * x),)


def ref_c_loop(x):
    """@loop of captures-cse.mlir."""
    s = _while(x * 1.5, lambda s: jnp.sum(s) < 10.0, lambda s: s * 1.5 + 0.1, 6)
    return (jnp.sum(s * s),)


Ref = Callable[..., tuple]


def grad_ref(f: Ref) -> Ref:
    """What ``--autodiff`` adds for ``f`` (wrt its first argument): outputs, then the
    VJP of output 0 with the seed passed last."""
    def g(x, *rest):
        *args, seed = rest
        outs, pull = jax.vjp(lambda v: f(v, *args)[0], x)
        return (*f(x, *args), pull(seed)[0])
    return g


def jvp_ref(f: Ref) -> Ref:
    """What ``--jvp`` adds for ``f`` (wrt its first argument): outputs, then tangents."""
    def j(x, *rest):
        *args, t = rest
        outs, touts = jax.jvp(lambda v: f(v, *args), (x,), (t,))
        return (*outs, *touts)
    return j


def vmap_ref(f: Ref, in_axes: Sequence[int | None]) -> Ref:
    return jax.vmap(f, in_axes=tuple(in_axes))


# ---------------------------------------------------------------- running the passes


def run_chain(path: str, steps: Sequence[tuple]) -> ModuleOp:
    """Apply ``steps`` (("cse",), ("grad", f), ("jvp", f), ("vmap", f, batched)) to the
    module of ``path``; return the verified result, re-parsed from its text."""
    module = parse((CONTROL / path).read_text(), str(CONTROL / path))
    for step in steps:
        kind, *args = step
        if kind == "cse":
            cse(module)
        elif kind == "grad":
            grad_with_loss(module, args[0])
        elif kind == "jvp":
            jvp(module, args[0])
        else:
            vmap(module, args[0], args[1], 2)
        verify(module)
    text = to_text(module)
    again = parse(text)
    verify(again)
    assert to_text(again) == text
    return again


def evaluate(module: ModuleOp, entry: str, args: Sequence[np.ndarray]) -> tuple:
    """``entry`` on float32 ``args``, interpreted; where a region captures a value, also
    compiled, and both must agree."""
    args32 = [np.asarray(a, np.float32) for a in args]
    interpreted = rlx.interpret(module, *args32, entry=entry)
    if any(values_from_above(op) for op in find_func(module, entry).walk()):
        native = rlx.compile(module, entry=entry)(*args32)
        for a, b in zip(interpreted, native, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    return interpreted


def check(module: ModuleOp, entry: str, ref: Ref, args: Sequence[np.ndarray]) -> None:
    got = evaluate(module, entry, args)
    want = ref(*[np.asarray(np.asarray(a, np.float32), np.float64) for a in args])
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w), rtol=2e-5,
                                   atol=2e-5)


RNG = np.random.default_rng(7)
SEED = np.float32(0.7)
T = RNG.normal(size=3)
D = RNG.normal(size=3)
DS = RNG.normal(size=(2, 3))

CUSTOMFN = [  # the chains of /tmp/review2/bug_customfn_cse_capture.mlir's header
    ([("grad", "f"), ("grad", "f_grad")], "f_grad_grad", grad_ref(grad_ref(ref_customfn)),
     [X, SEED, SEED]),
    ([("jvp", "f"), ("grad", "f_jvp")], "f_jvp_grad", grad_ref(jvp_ref(ref_customfn_fwd)),
     [X, T, SEED]),
    ([("vmap", "f", ["x"]), ("grad", "f_vmap")], "f_vmap_grad",
     grad_ref(vmap_ref(ref_customfn, [0])), [XS, np.array([SEED, 1.3])]),
    ([("grad", "f"), ("vmap", "f_grad", ["x"])], "f_grad_vmap",
     vmap_ref(grad_ref(ref_customfn), [0, None]), [XS, SEED]),
]


@pytest.mark.parametrize("with_cse", [False, True], ids=["closed", "cse"])
@pytest.mark.parametrize("steps,entry,ref,args", CUSTOMFN, ids=[c[1] for c in CUSTOMFN])
def test_customfn_chains_match_jax(steps, entry, ref, args, with_cse):
    """--cse first makes @f's vjp region capture @f's constant 2.0."""
    module = run_chain("captures-customfn.mlir", [("cse",)] * with_cse + steps)
    check(module, entry, ref, args)


CSE_CHAINS = [
    ("cond", "grad", grad_ref(ref_c_cond), [X, SEED]),
    ("cond", "grad", grad_ref(ref_c_cond), [-X, SEED]),
    ("cond", "jvp", jvp_ref(ref_c_cond), [X, T]),
    ("cond", "vmap", vmap_ref(ref_c_cond, [0]), [XS]),
    ("loop", "grad", grad_ref(ref_c_loop), [X, SEED]),
    ("loop", "jvp", jvp_ref(ref_c_loop), [X, T]),
    ("loop", "vmap", vmap_ref(ref_c_loop, [0]), [XS]),
]


@pytest.mark.parametrize("name,kind,ref,args", CSE_CHAINS)
def test_after_cse_if_and_while_match_jax(name, kind, ref, args):
    """--cse, then one pass, on the reproducers of rlx.if and rlx.while."""
    step = (kind, name, ["a0"]) if kind == "vmap" else (kind, name)
    module = run_chain("captures-cse.mlir", [("cse",), step])
    check(module, f"{name}_{kind}", ref, args)


CAPTURES = [
    ("cond", "grad", grad_ref(ref_cond), [X, SEED]),
    ("cond", "grad", grad_ref(ref_cond), [-X, SEED]),
    ("cond", "jvp", jvp_ref(ref_cond), [X, T]),
    ("cond", "vmap", vmap_ref(ref_cond, [0]), [XS]),
    ("loop", "grad", grad_ref(ref_loop), [X, SEED]),
    ("loop", "jvp", jvp_ref(ref_loop), [X, T]),
    ("loop", "vmap", vmap_ref(ref_loop, [0]), [XS]),
    ("inline_fn", "grad", grad_ref(ref_inline_fn), [X, SEED]),
    ("inline_fn", "jvp", jvp_ref(ref_inline_fn), [X, T]),
    ("inline_fn", "vmap", vmap_ref(ref_inline_fn, [0]), [XS]),
    ("gate", "grad", grad_ref(ref_gate), [X, D, SEED]),
    ("gate", "vmap", vmap_ref(ref_gate, [None, 0]), [X, DS]),
    ("vjp_data", "grad", grad_ref(ref_vjp_data), [X, D, SEED]),
    ("vjp_data", "vmap", vmap_ref(ref_vjp_data, [None, 0]), [X, DS]),
    ("nested", "grad", grad_ref(ref_nested), [X, SEED]),
    ("nested", "grad", grad_ref(ref_nested), [-X, SEED]),
    ("nested", "jvp", jvp_ref(ref_nested), [X, T]),
    ("nested", "vmap", vmap_ref(ref_nested, [0]), [XS]),
]
BATCHED = {"gate": ["y"], "vjp_data": ["d"]}


@pytest.mark.parametrize("name,kind,ref,args", CAPTURES)
def test_hand_written_captures_match_jax(name, kind, ref, args):
    """Regions capturing values that depend on the inputs: derivatives, tangents and the
    batch axis flow through the captured value."""
    step = (kind, name, BATCHED.get(name, ["x"])) if kind == "vmap" else (kind, name)
    module = run_chain("captures.mlir", [step])
    check(module, f"{name}_{kind}", ref, args)


def test_pass_keeps_regions_closed():
    """The passes' CSE does not leave a region capturing a constant: the vjp region of
    the custom_fn in @f_grad_vmap has its own 2.0 (so the interpreter can run it)."""
    module = run_chain("captures-customfn.mlir", [("grad", "f"), ("vmap", "f_grad", ["x"])])
    g = find_func(module, "f_grad_vmap")
    assert not any(values_from_above(op) for op in g.walk())


# ---------------------------------------------------------------- Python API


def test_vmap_of_grad_through_custom_fn_matches_jax():
    """The reported crash: KeyError on the rlx.constant that CSE shared with the vjp
    region; grad alone and vmap alone worked."""
    def f(x):
        b = x.builder
        y = b.custom_fn([x * 2.0], lambda b, a: a * a, vjp=lambda b, a, y, g: g * a * 2.0)
        return y.sum()

    def jf(x):
        return ref_customfn(x)[0]

    np.testing.assert_allclose(rlx.grad(f)(XS[0]), jax.grad(jf)(XS[0]), rtol=1e-12)
    np.testing.assert_allclose(rlx.vmap(f)(XS), jax.vmap(jf)(XS), rtol=1e-12)
    got = rlx.vmap(rlx.grad(f))(XS)
    np.testing.assert_allclose(got, jax.vmap(jax.grad(jf))(XS), rtol=1e-12)
    np.testing.assert_allclose(got, 8.0 * XS, rtol=1e-12)
