"""The README's example runs as written and its numbers are right (checked against torch)."""

import re
from pathlib import Path

import numpy as np
import torch

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    return re.search(r"```python\n(.*?)```", README.read_text(), re.S).group(1)


def torch_loss(params, x, labels):
    h = torch.relu(torch.tensor(x) @ params["w1"] + params["b1"])
    return torch.nn.functional.cross_entropy(h @ params["w2"] + params["b2"],
                                             torch.tensor(labels).long())


def test_readme_example_runs_and_matches_torch(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile(readme_example(), str(README), "exec"), scope)
    params, x, labels = scope["params"], scope["x"], scope["labels"]
    t = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    loss = torch_loss(t, x, labels)
    loss.backward()
    np.testing.assert_allclose(scope["loss"], loss.item(), rtol=1e-5)
    for name in params:
        np.testing.assert_allclose(scope["grads"][name], t[name].grad.numpy(), rtol=1e-4,
                                   atol=1e-6)
        np.testing.assert_allclose(scope["new_params"][name],
                                   params[name] - 0.1 * t[name].grad.numpy(), atol=1e-6)
    per_example = scope["per_example"]
    assert per_example["w1"].shape == (32, 64, 128)
    for name in params:
        np.testing.assert_allclose(per_example[name].mean(0), t[name].grad.numpy(), atol=1e-6)
    x0 = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    torch_loss(x0, x[:1], labels[:1]).backward()
    np.testing.assert_allclose(per_example["w2"][0], x0["w2"].grad.numpy(), rtol=1e-4,
                               atol=1e-6)
    assert "rlx.softmax_cross_entropy" in capsys.readouterr().out
    assert "relu_backward" in (tmp_path / "grad.svg").read_text()
