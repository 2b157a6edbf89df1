"""Solve family (filled in by its owner)."""

OPS: list = []
