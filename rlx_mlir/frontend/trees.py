"""Pytree helpers (JAX's ``jax.tree.map`` / ``jax.tree.leaves``) on the pytrees the
transformations take: dicts (visited in key order), lists, tuples and namedtuples, with
``None`` an empty subtree and anything else a leaf.

    >>> params = rlx.tree_map(lambda p, g: p - 0.1 * g, params, grads)   # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlx_mlir.builder import _user_location
from rlx_mlir.diagnostics import RlxError, loc_from_attr
from rlx_mlir.frontend.tracing import TreeDef, flatten, unflatten


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of ``tree`` in order (dict keys sorted, as the transformations see them).

    >>> rlx.tree_leaves({"b": 2, "a": [1, None]})
    [1, 2]
    """
    return [leaf for _, leaf in flatten(tree)[0]]


def tree_map(fn: Callable[..., Any], tree: Any, *rest: Any) -> Any:
    """``fn`` applied leaf by leaf to ``tree`` and the ``rest`` (same structure), in a
    tree of that structure.

    >>> rlx.tree_map(lambda a, b: a + b, {"w": 1, "b": [2]}, {"w": 10, "b": [20]})
    {'b': [22], 'w': 11}
    """
    leaves, structure = flatten(tree)
    columns = [[leaf for _, leaf in leaves]]
    for i, other in enumerate(rest, start=1):
        other_leaves, other_structure = flatten(other)
        if other_structure != structure:
            raise RlxError(f"tree_map: tree {i} has another structure than the first "
                           f"({_describe(other_structure)} against {_describe(structure)})",
                           loc=loc_from_attr(_user_location()))
        columns.append([leaf for _, leaf in other_leaves])
    return unflatten(structure, [fn(*row) for row in zip(*columns, strict=True)])


def _describe(tree: TreeDef) -> str:
    if tree.kind == "dict":
        return f"a dict with keys {list(tree.keys)}"
    if tree.kind in ("list", "tuple"):
        return f"a {tree.kind} of {len(tree.children)}"
    return "a leaf" if tree.kind == "leaf" else "None"
