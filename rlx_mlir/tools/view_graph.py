"""Pictures of a function's dataflow graph: SVG written directly, PNG via matplotlib.

    rlx-opt model.mlir --autodiff --view-graph=grad.svg        # the last function
    rlx-opt model.mlir -p 'view-graph{out.png func=f}'
    rlx_mlir.view(module, "out.svg", func=None)

One node per op of the function's body (its name and result shapes), one per
argument (inputs blue, ``rlx.param`` parameters green) and one per returned value
(red); an edge for every SSA use. Ops with regions (``scan``, ``if``, ...) are one
node. The layout is pure Python (no Graphviz): longest-path layering, virtual nodes
on long edges, barycenter ordering sweeps, then centred coordinates; the canvas
grows with the graph.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, BlockArgument, Operation

from rlx_mlir.diagnostics import RlxError

CHAR_WIDTH = 6.6       # px per character of the 11 px label font
NODE_HEIGHT = 34.0
ROW_GAP = 40.0
COLUMN_GAP = 14.0
MARGIN = 30.0
HEADER = 40.0
STYLE = {  # kind: (fill, stroke)
    "input": ("#dbeafe", "#1d4ed8"),
    "param": ("#dcfce7", "#15803d"),
    "op": ("#fffbeb", "#92400e"),
    "const": ("#f3f4f6", "#6b7280"),
    "output": ("#fee2e2", "#b91c1c"),
}


# ---------------------------------------------------------------- the graph


@dataclass
class Node:
    """A node of the picture; ``virtual`` nodes route long edges and are not drawn."""

    kind: str
    label: str = ""
    detail: str = ""
    title: str = ""
    layer: int = 0
    x: float = 0.0
    y: float = 0.0
    width: float = 2.0

    @property
    def virtual(self) -> bool:
        return self.kind == "virtual"


@dataclass
class Graph:
    """Nodes, SSA edges (source, target indices) and, after layout, each edge's route."""

    name: str
    nodes: list[Node] = field(default_factory=list)
    edges: list[tuple[int, int]] = field(default_factory=list)
    routes: list[list[int]] = field(default_factory=list)
    width: float = 0.0
    height: float = 0.0

    def count(self, *kinds: str) -> int:
        """How many nodes have one of these kinds."""
        return sum(n.kind in kinds for n in self.nodes)


def type_text(t: Attribute) -> str:
    """``tensor<4x3xf32>`` as ``4x3 f32``; other types as printed."""
    from rlx_mlir.dialects.base import dtype_of, shape_of

    try:
        shape, dtype = shape_of(t), dtype_of(t)
    except Exception:
        return str(t)
    return f"{'x'.join(map(str, shape))} {dtype}" if shape else dtype


def _arg_attrs(f: func.FuncOp, i: int) -> dict[str, Any]:
    if f.arg_attrs is None or i >= len(f.arg_attrs.data):
        return {}
    return dict(f.arg_attrs.data[i].data)


def _arg_node(f: func.FuncOp, i: int, arg: BlockArgument) -> Node:
    attrs = _arg_attrs(f, i)
    name = attrs["rlx.name"].data if "rlx.name" in attrs else (arg.name_hint or f"arg{i}")
    kind = "param" if "rlx.param" in attrs else "input"
    return Node(kind, f"%{name}", type_text(arg.type), f"{kind} %{name}")


def _op_node(op: Operation) -> Node:
    short = op.name.removeprefix("rlx.")
    detail = ", ".join(type_text(r.type) for r in op.results)
    nested = sum(1 for region in op.regions for _ in region.walk())
    if nested:
        short += f" [{nested} ops]"
    kind = "const" if op.name == "rlx.constant" else "op"
    return Node(kind, short, detail, op.name)


def _used_values(op: Operation) -> Iterable[Any]:
    """Operands of ``op`` and of the ops nested in its regions."""
    yield from op.operands
    for region in op.regions:
        for inner in region.walk():
            yield from inner.operands


def graph_of(f: func.FuncOp) -> Graph:
    """The dataflow graph of ``f``'s body (nodes in program order)."""
    graph = Graph(f.sym_name.data)
    index: dict[Any, int] = {}
    block = f.body.block
    for i, arg in enumerate(block.args):
        index[arg] = len(graph.nodes)
        graph.nodes.append(_arg_node(f, i, arg))
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            _add_outputs(graph, op, index)
            continue
        me = len(graph.nodes)
        graph.nodes.append(_op_node(op))
        sources = {index[v] for v in _used_values(op) if v in index}
        graph.edges += [(s, me) for s in sorted(sources)]
        for r in op.results:
            index[r] = me
    return graph


def _add_outputs(graph: Graph, ret: func.ReturnOp, index: dict[Any, int]) -> None:
    for i, v in enumerate(ret.operands):
        me = len(graph.nodes)
        graph.nodes.append(Node("output", f"result {i}", type_text(v.type), f"output {i}"))
        if v in index:
            graph.edges.append((index[v], me))


# ---------------------------------------------------------------- layout


def _neighbours(n: int, edges: list[tuple[int, int]]) -> tuple[list[list[int]], list[list[int]]]:
    preds: list[list[int]] = [[] for _ in range(n)]
    succs: list[list[int]] = [[] for _ in range(n)]
    for s, t in edges:
        preds[t].append(s)
        succs[s].append(t)
    return preds, succs


def assign_layers(graph: Graph) -> None:
    """Longest-path layering: arguments on top, constants just above their first
    use, outputs on the bottom row."""
    preds, succs = _neighbours(len(graph.nodes), graph.edges)
    for i, node in enumerate(graph.nodes):  # program order is a topological order
        node.layer = 1 + max((graph.nodes[p].layer for p in preds[i]), default=-1)
    for i, node in enumerate(graph.nodes):
        if node.kind == "const" and not preds[i] and succs[i]:
            node.layer = max(0, min(graph.nodes[s].layer for s in succs[i]) - 1)
    bottom = 1 + max((n.layer for n in graph.nodes if n.kind != "output"), default=0)
    for node in graph.nodes:
        if node.kind == "output":
            node.layer = bottom


def add_virtual_nodes(graph: Graph) -> None:
    """Split every edge spanning several layers with one virtual node per layer."""
    graph.routes = []
    for s, t in graph.edges:
        route = [s]
        for layer in range(graph.nodes[s].layer + 1, graph.nodes[t].layer):
            route.append(len(graph.nodes))
            graph.nodes.append(Node("virtual", layer=layer))
        graph.routes.append(route + [t])


def _layer_edges(graph: Graph) -> list[tuple[int, int]]:
    return [(a, b) for route in graph.routes for a, b in zip(route, route[1:], strict=False)]


def crossings(rows: list[list[int]], edges: list[tuple[int, int]], graph: Graph) -> int:
    """The number of edge crossings between adjacent rows."""
    position = {v: i for row in rows for i, v in enumerate(row)}
    by_layer: dict[int, list[tuple[int, int]]] = {}
    for s, t in edges:
        by_layer.setdefault(graph.nodes[s].layer, []).append((position[s], position[t]))
    total = 0
    for pairs in by_layer.values():
        pairs.sort()
        ends = [t for _, t in pairs]
        total += sum(1 for i in range(len(ends)) for j in range(i + 1, len(ends))
                     if ends[i] > ends[j])
    return total


def order_rows(graph: Graph, sweeps: int = 8) -> list[list[int]]:
    """Barycenter ordering: alternate down and up sweeps, keep the fewest crossings."""
    depth = 1 + max((n.layer for n in graph.nodes), default=0)
    rows: list[list[int]] = [[] for _ in range(depth)]
    for i, node in enumerate(graph.nodes):
        rows[node.layer].append(i)
    edges = _layer_edges(graph)
    preds, succs = _neighbours(len(graph.nodes), edges)
    best, best_count = [list(r) for r in rows], crossings(rows, edges, graph)
    for sweep in range(sweeps):
        down = sweep % 2 == 0
        layers = range(1, depth) if down else range(depth - 2, -1, -1)
        for layer in layers:
            _sort_by_barycenter(rows, layer, preds if down else succs)
        count = crossings(rows, edges, graph)
        if count < best_count:
            best, best_count = [list(r) for r in rows], count
    return best


def _sort_by_barycenter(rows: list[list[int]], layer: int, adjacent: list[list[int]]) -> None:
    position = {v: i for row in rows for i, v in enumerate(row)}
    row = rows[layer]

    def key(item: tuple[int, int]) -> float:
        i, v = item
        near = adjacent[v]
        return sum(position[u] for u in near) / len(near) if near else float(i)

    rows[layer] = [v for _, v in sorted(enumerate(row), key=key)]


def assign_coordinates(graph: Graph, rows: list[list[int]], passes: int = 8) -> None:
    """Pack each row left to right, then pull nodes toward their neighbours' mean x."""
    for node in graph.nodes:
        if not node.virtual:
            node.width = max(len(node.label), len(node.detail)) * CHAR_WIDTH + 16
    for layer, row in enumerate(rows):
        x = 0.0
        for v in row:
            node = graph.nodes[v]
            node.x, node.y = x + node.width / 2, HEADER + layer * (NODE_HEIGHT + ROW_GAP)
            x += node.width + (COLUMN_GAP if not node.virtual else 4)
    preds, succs = _neighbours(len(graph.nodes), _layer_edges(graph))
    both = [p + s if graph.nodes[v].virtual else [] for v, (p, s) in enumerate(
        zip(preds, succs, strict=True))]  # virtual nodes sit between their two ends
    for p in range(passes):
        ordered = rows if p % 2 == 0 else rows[::-1]
        adjacent = [b or (preds[v] if p % 2 == 0 else succs[v]) for v, b in enumerate(both)]
        for row in ordered:
            _relax_row(graph, row, adjacent)
    _normalise(graph)


def _gap(left: Node, right: Node) -> float:
    """Bundled long edges (two virtual nodes side by side) may run close together."""
    return 4.0 if left.virtual and right.virtual else COLUMN_GAP


def _relax_row(graph: Graph, row: list[int], adjacent: list[list[int]]) -> None:
    nodes = [graph.nodes[v] for v in row]
    desired = [sum(graph.nodes[u].x for u in adjacent[v]) / len(adjacent[v])
               if adjacent[v] else graph.nodes[v].x for v in row]
    placed: list[float] = []
    for i, (node, want) in enumerate(zip(nodes, desired, strict=True)):
        if i:
            left = nodes[i - 1]
            want = max(want, placed[-1] + left.width / 2 + _gap(left, node) + node.width / 2)
        placed.append(want)
    shift = sum(d - p for d, p in zip(desired, placed, strict=True)) / max(len(placed), 1)
    for node, x in zip(nodes, placed, strict=True):
        node.x = x + shift


def _normalise(graph: Graph) -> None:
    left = min((n.x - n.width / 2 for n in graph.nodes), default=0.0)
    for n in graph.nodes:
        n.x += MARGIN - left
    graph.width = max(max((n.x + n.width / 2 for n in graph.nodes), default=0.0) + MARGIN, 360)
    graph.height = max((n.y for n in graph.nodes), default=0.0) + NODE_HEIGHT + MARGIN


def layout(graph: Graph) -> Graph:
    """Lay ``graph`` out in place (layers, virtual nodes, order, coordinates)."""
    assign_layers(graph)
    add_virtual_nodes(graph)
    assign_coordinates(graph, order_rows(graph))
    return graph


# ---------------------------------------------------------------- drawing


def edge_segments(graph: Graph, route: list[int]) -> list[tuple[tuple[float, float], ...]]:
    """Each edge as cubic Bezier pieces ``(p0, c1, c2, p3)`` and straight ``(p0, p1)``."""
    pieces: list[tuple[tuple[float, float], ...]] = []
    x, y = graph.nodes[route[0]].x, graph.nodes[route[0]].y + NODE_HEIGHT
    for v in route[1:]:
        node = graph.nodes[v]
        top, mid = node.y, (y + node.y) / 2
        pieces.append(((x, y), (x, mid), (node.x, mid), (node.x, top)))
        x, y = node.x, top
        if node.virtual:
            pieces.append(((x, y), (x, y + NODE_HEIGHT)))
            y += NODE_HEIGHT
    return pieces


def _svg_path(pieces) -> str:
    d = [f"M{pieces[0][0][0]:.1f},{pieces[0][0][1]:.1f}"]
    for piece in pieces:
        if len(piece) == 4:
            d.append("C" + " ".join(f"{px:.1f},{py:.1f}" for px, py in piece[1:]))
        else:
            d.append(f"L{piece[1][0]:.1f},{piece[1][1]:.1f}")
    return " ".join(d)


def _svg_node(i: int, node: Node) -> str:
    fill, stroke = STYLE[node.kind]
    x, y = node.x - node.width / 2, node.y
    rx = 16 if node.kind in ("input", "param", "output") else 4
    return (
        f'<g class="node {node.kind}" id="n{i}"><title>{escape(node.title)}</title>'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{node.width:.1f}" height="{NODE_HEIGHT}" '
        f'rx="{rx}" fill="{fill}" stroke="{stroke}"/>'
        f'<text x="{node.x:.1f}" y="{y + 14:.1f}" font-weight="bold">{escape(node.label)}</text>'
        f'<text x="{node.x:.1f}" y="{y + 27:.1f}" fill="#374151">{escape(node.detail)}</text>'
        "</g>")


def _svg_legend() -> str:
    items, x = [], MARGIN
    for kind in ("input", "param", "op", "const", "output"):
        fill, stroke = STYLE[kind]
        items.append(f'<rect x="{x:.0f}" y="24" width="12" height="10" fill="{fill}" '
                     f'stroke="{stroke}"/><text x="{x + 16:.0f}" y="33" '
                     f'text-anchor="start">{kind}</text>')
        x += 70
    return "".join(items)


def to_svg(graph: Graph) -> str:
    """The laid-out graph as an SVG document."""
    ops = graph.count("op", "const")
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{graph.width:.0f}" '
            f'height="{graph.height:.0f}" viewBox="0 0 {graph.width:.0f} {graph.height:.0f}" '
            'font-family="Helvetica, Arial, sans-serif" font-size="11" text-anchor="middle">')
    defs = ('<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" '
            'markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#6b7280"/>'
            '</marker></defs><rect width="100%" height="100%" fill="white"/>')
    title = (f'<text x="{MARGIN}" y="16" text-anchor="start" font-size="13" '
             f'font-weight="bold">@{escape(graph.name)}: {ops} ops</text>')
    edges = "".join(
        f'<path class="edge" d="{_svg_path(edge_segments(graph, r))}" fill="none" '
        'stroke="#6b7280" stroke-opacity="0.7" marker-end="url(#arrow)"/>'
        for r in graph.routes)
    nodes = "".join(_svg_node(i, n) for i, n in enumerate(graph.nodes) if not n.virtual)
    return (f'{head}{defs}{title}{_svg_legend()}<g class="edges">{edges}</g>'
            f'<g class="nodes">{nodes}</g></svg>\n')


def write_png(graph: Graph, path: Path, max_pixels: int = 30000) -> None:
    """Draw the laid-out graph with matplotlib (Agg): one pixel per layout unit,
    scaled down when a side would exceed ``max_pixels``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch, PathPatch
    from matplotlib.path import Path as MplPath

    dpi = 100 * min(1.0, max_pixels / max(graph.width, graph.height))
    fig = plt.figure(figsize=(graph.width / 100, graph.height / 100), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, graph.width)
    ax.set_ylim(graph.height, 0)
    ax.axis("off")
    points = 72 / 100  # font points per layout pixel
    ax.text(MARGIN, 16, f"@{graph.name}: {graph.count('op', 'const')} ops",
            fontsize=13 * points, fontweight="bold", va="baseline")
    _mpl_legend(ax, points, FancyBboxPatch)
    for route in graph.routes:
        verts, codes = _mpl_path(edge_segments(graph, route), MplPath)
        ax.add_patch(PathPatch(MplPath(verts, codes), fill=False, edgecolor="#6b7280",
                               alpha=0.7, lw=0.8))
        end = graph.nodes[route[-1]]
        ax.plot([end.x], [end.y - 2], marker="v", color="#6b7280", markersize=4)
    for node in graph.nodes:
        if node.virtual:
            continue
        fill, stroke = STYLE[node.kind]
        ax.add_patch(FancyBboxPatch((node.x - node.width / 2, node.y), node.width, NODE_HEIGHT,
                                    boxstyle="round,pad=0,rounding_size=4", facecolor=fill,
                                    edgecolor=stroke, lw=1))
        ax.text(node.x, node.y + 14, node.label, ha="center", va="baseline",
                fontsize=11 * points, fontweight="bold")
        ax.text(node.x, node.y + 27, node.detail, ha="center", va="baseline",
                fontsize=11 * points, color="#374151")
    fig.savefig(path, dpi=dpi, facecolor="white")
    plt.close(fig)


def _mpl_legend(ax, points: float, box) -> None:
    x = MARGIN
    for kind in ("input", "param", "op", "const", "output"):
        fill, stroke = STYLE[kind]
        ax.add_patch(box((x, 24), 12, 10, boxstyle="square,pad=0", facecolor=fill,
                         edgecolor=stroke))
        ax.text(x + 16, 33, kind, fontsize=11 * points, va="baseline")
        x += 70


def _mpl_path(pieces, MplPath):
    verts = [pieces[0][0]]
    codes = [MplPath.MOVETO]
    for piece in pieces:
        verts += piece[1:]
        codes += [MplPath.CURVE4] * 3 if len(piece) == 4 else [MplPath.LINETO]
    return verts, codes


# ---------------------------------------------------------------- entry points


def select_func(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    """The function called ``name``; by default the module's last function (after
    ``--autodiff`` that is the gradient)."""
    funcs = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if not funcs:
        raise RlxError("the module has no function to draw", op=module)
    if name is None:
        return funcs[-1]
    for f in funcs:
        if f.sym_name.data == name:
            return f
    raise RlxError(f"no function named @{name} (have: "
                   f"{', '.join('@' + f.sym_name.data for f in funcs)})", op=module)


def view(module: Any, path: str | os.PathLike, func: str | None = None) -> Graph:
    """Draw ``func`` of ``module`` (a module, rlx text, or a traced function from
    ``.lower()``) to ``path``: ``.svg`` or ``.png``. Returns the laid-out graph."""
    from rlx_mlir.ir import parse

    if isinstance(module, str):
        module = parse(module)
    module = getattr(module, "module", module)
    path = Path(path)
    if path.suffix.lower() not in (".svg", ".png"):
        raise RlxError(f"cannot draw to '{path}': use a .svg or .png file name")
    graph = layout(graph_of(select_func(module, func)))
    try:
        if path.suffix.lower() == ".svg":
            path.write_text(to_svg(graph))
        else:
            write_png(graph, path)
    except OSError as e:
        raise RlxError(f"cannot draw to '{path}': {e.strerror or e}") from None
    return graph


def parse_stage_options(stage: str) -> tuple[str, str | None]:
    """``view-graph{out.svg}``, ``view-graph{path=out.svg func=f}`` -> (path, func).

    >>> parse_stage_options("view-graph{out.png func=f_grad}")
    ('out.png', 'f_grad')
    """
    _, _, opts = stage.partition("{")
    path, func_name = None, None
    for token in opts.rstrip("}").replace(",", " ").split():
        key, eq, value = token.partition("=")
        if not eq:
            path = token
        elif key == "path":
            path = value
        elif key == "func":
            func_name = value
        else:
            raise RlxError(f"view-graph: unknown option '{key}' (expected path, func)")
    if not path:
        raise RlxError("view-graph needs an output file: --view-graph=out.svg")
    return path, func_name


def view_graph_stage(stage: str, module: ModuleOp, args: Any) -> None:
    """rlx-opt ``--view-graph=out.svg``: write the picture, print the module unchanged."""
    path, func_name = parse_stage_options(stage)
    graph = view(module, path, func_name)
    print(f"view-graph: wrote {path} (@{graph.name}, {graph.count('op', 'const')} ops)",
          file=sys.stderr)
    return None
