"""The README's example runs as written and its gradients are right."""

import re
from pathlib import Path

import numpy as np
import torch

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    return re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)


def test_readme_example_runs_and_matches_torch():
    scope: dict = {}
    exec(compile(readme_example(), str(README), "exec"), scope)
    args = scope["args"]
    t = {k: torch.tensor(v, requires_grad=k.startswith(("w", "b"))) for k, v in args.items()}
    h = torch.relu(t["x"] @ t["w1"] + t["b1"])
    loss = torch.nn.functional.cross_entropy(h @ t["w2"] + t["b2"], t["labels"].long())
    loss.backward()
    np.testing.assert_allclose(scope["loss"], loss.item(), rtol=1e-5)
    for name in ("w1", "b1", "w2", "b2"):
        np.testing.assert_allclose(scope[f"d{name}"], t[name].grad.numpy(), rtol=1e-4, atol=1e-6)
