"""Comparing pytrees of results with JAX's (imported by the frontend tests)."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def assert_trees_close(got: Any, want: Any, rtol: float = 1e-12, atol: float = 1e-14) -> None:
    """Equal pytree structure (``None`` included) and float64 leaves equal to rounding.

    >>> assert_trees_close({"a": np.ones(2)}, {"a": np.ones(2)})
    """
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves, strict=True):
        assert np.asarray(g).dtype == np.float64
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)
