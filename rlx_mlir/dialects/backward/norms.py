"""Backward ops (filled in by their owner)."""

OPS: list = []
