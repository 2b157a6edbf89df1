"""Running rlx code: the numpy reference interpreter (and the JIT, issue 4)."""
