"""Op family module (filled in by its owner)."""

OPS: list = []
