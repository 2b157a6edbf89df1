"""jvp and vmap of the elementwise family: tangents vs finite differences, vmap vs a loop."""

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.testing import check_jvp
from rlx_mlir.transforms.vmap import vmap


def model():
    b = rlx.Builder("f")
    x, w, c = b.param("x", (3, 4)), b.param("w", (4,)), b.input("c", (3, 1))
    y = b.tanh(x) * w + b.gelu(x) / (c * c + 1.0) - b.max(x, c) + b.min(w, x) ** 2.0
    y = y + b.where(b.compare(x, c, predicate="gt"), b.exp(x), b.sigmoid(w))
    b.ret(b.silu(y), b.relu(x) + w, b.cast(x, "f64") * 2.0)
    return b.module


def test_jvp_matches_finite_differences():
    check_jvp(model())


def test_jvp_adds_tangent_arguments_and_outputs():
    m = model()
    g = rlx.jvp(m, "f")
    names = [a.name_hint for a in g.body.block.args]
    assert names[-2:] == ["tangent_x", "tangent_w"]
    assert len(g.function_type.outputs.data) == 6


@pytest.mark.parametrize("batched", [["x"], ["c"], ["x", "c"], ["w"]])
def test_vmap_matches_a_loop(batched):
    m = model()
    vmap(m, "f", batched, 4)
    rng = np.random.default_rng(0)
    shapes = {"x": (3, 4), "w": (4,), "c": (3, 1)}
    args = {n: rng.standard_normal(((4,) if n in batched else ()) + s).astype(np.float32)
            for n, s in shapes.items()}
    outs = rlx.interpret(m, entry="f_vmap", **args)
    for i in range(4):
        row = {n: v[i] if n in batched else v for n, v in args.items()}
        for got, want in zip(outs, rlx.interpret(m, entry="f", **row), strict=True):
            np.testing.assert_allclose(got[i], want, rtol=1e-6)


def test_vmap_rejects_unknown_argument():
    with pytest.raises(rlx.RlxError, match="has no argument 'z' to batch"):
        vmap(model(), "f", ["z"], 2)
