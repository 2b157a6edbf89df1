"""Pictures of dataflow graphs: ``rlx_mlir.view`` and ``rlx-opt --view-graph``."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from xdsl.dialects import func

import rlx_mlir as rlx
from rlx_mlir.ir import to_text
from rlx_mlir.models import mlp_loss, transformer_block_loss
from rlx_mlir.tools.rlx_opt import main as rlx_opt
from rlx_mlir.tools.view_graph import parse_stage_options, select_func

SVG = "{http://www.w3.org/2000/svg}"


def body_ops(module, name=None):
    f = select_func(module, name)
    return [op for op in f.body.block.ops if not isinstance(op, func.ReturnOp)]


def node_classes(path):
    root = ET.parse(path).getroot()
    return [g.get("class").split()[1] for g in root.iter(f"{SVG}g")
            if (g.get("class") or "").startswith("node ")]


def check_svg(path, module, name=None):
    kinds = node_classes(path)
    ops = body_ops(module, name)
    f = select_func(module, name)
    assert sum(k in ("op", "const") for k in kinds) == len(ops)
    assert sum(k in ("input", "param") for k in kinds) == len(f.body.block.args)
    assert kinds.count("output") == len(f.function_type.outputs.data)
    assert kinds.count("param") == sum("rlx.param" in d.data for d in f.arg_attrs.data)
    text = path.read_text()
    for op in ops:
        assert f"<title>{op.name}</title>" in text


def test_mlp_gradient_svg_has_one_node_per_op(tmp_path):
    module = mlp_loss(batch=8, sizes=(16, 32, 4))
    rlx.grad_with_loss(module)
    graph = rlx.view(module, tmp_path / "g.svg")
    assert graph.name == "mlp_loss_grad"  # the last function by default
    check_svg(tmp_path / "g.svg", module)
    rlx.view(module, tmp_path / "f.svg", func="mlp_loss")
    check_svg(tmp_path / "f.svg", module, "mlp_loss")


def test_transformer_block_gradient_svg_and_png(tmp_path):
    module = transformer_block_loss(batch=2, seq=8, d_model=32, heads=4)
    rlx.grad_with_loss(module)
    graph = rlx.view(module, tmp_path / "g.svg")
    check_svg(tmp_path / "g.svg", module)
    assert graph.width > 1000 and graph.height > 1000  # the canvas grows with the graph
    rlx.view(module, tmp_path / "g.png")
    data = (tmp_path / "g.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    from PIL import Image

    with Image.open(tmp_path / "g.png") as image:
        image.verify()
        assert min(image.size) > 1000


def test_layout_keeps_edges_pointing_down(tmp_path):
    module = mlp_loss(batch=4, sizes=(6, 8, 3))
    rlx.grad_with_loss(module)
    graph = rlx.view(module, tmp_path / "g.svg")
    for s, t in graph.edges:
        assert graph.nodes[s].layer < graph.nodes[t].layer
    for route in graph.routes:  # virtual nodes fill every layer in between
        layers = [graph.nodes[v].layer for v in route]
        assert layers == list(range(layers[0], layers[-1] + 1))


def test_view_of_a_traced_gradient(tmp_path):
    def loss(w, x):
        return rlx.nn.relu(x @ w).sum()

    traced = rlx.grad(loss).lower(np.ones((3, 2), np.float32), np.ones((4, 3), np.float32))
    rlx.view(traced, tmp_path / "t.svg")
    check_svg(tmp_path / "t.svg", traced.module)
    assert "relu_backward" in (tmp_path / "t.svg").read_text()


def test_rlx_opt_view_graph_stage(tmp_path, capsys):
    module = mlp_loss(batch=4, sizes=(6, 8, 3))
    src = tmp_path / "m.mlir"
    src.write_text(to_text(module))
    out = tmp_path / "out.svg"
    assert rlx_opt([str(src), "--autodiff", f"--view-graph={out}"]) == 0
    captured = capsys.readouterr()
    assert "func.func @mlp_loss_grad" in captured.out  # the module still prints
    assert f"wrote {out}" in captured.err
    rlx.grad_with_loss(module)
    check_svg(out, module)
    png = tmp_path / "f.png"
    assert rlx_opt([str(src), "-p", f"view-graph{{path={png} func=mlp_loss}}"]) == 0
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_stage_options_and_errors(tmp_path):
    assert parse_stage_options("view-graph{out.svg}") == ("out.svg", None)
    assert parse_stage_options("view-graph{path=a.png,func=f}") == ("a.png", "f")
    with pytest.raises(rlx.RlxError, match="needs an output file"):
        parse_stage_options("view-graph")
    module = mlp_loss(batch=4, sizes=(6, 8, 3))
    with pytest.raises(rlx.RlxError, match="use a .svg or .png"):
        rlx.view(module, tmp_path / "x.pdf")
    with pytest.raises(rlx.RlxError, match="no function named @nope"):
        rlx.view(module, tmp_path / "x.svg", func="nope")
