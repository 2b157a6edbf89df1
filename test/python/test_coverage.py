"""Rule coverage: every op has the rules its transforms need, and docs are up to date."""

import subprocess
import sys
from pathlib import Path

import pytest

from rlx_mlir.dialects import ALL_OPS
from rlx_mlir.rules import INTERPRET, JVP, LOWER, PREPARE_AD, VJP, VMAP
from rlx_mlir.transforms import all_passes

all_passes()  # import every module that registers rules

ROOT = Path(__file__).resolve().parents[2]

# Ops deliberately without a VJP rule; differentiating through them is a located error.
NO_VJP: dict[str, str] = {}


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_every_op_has_an_interpreter_rule(op):
    if op.name == "rlx.yield":
        return  # a terminator: its region's owner interprets it
    assert op in INTERPRET, f"{op.name} has no interpreter rule"


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_every_differentiable_op_has_a_vjp_rule(op):
    if op.name in NO_VJP:
        assert op not in VJP, f"{op.name} has a rule now: remove it from NO_VJP"
        return
    assert op in VJP or op in PREPARE_AD, f"{op.name} has no VJP rule"


# Ops deliberately without a JVP rule (forward mode through them is a located error).
NO_JVP: dict[str, str] = {}
# Ops that never need their own rule: a terminator, and an op without operands.
STRUCTURAL = {"rlx.yield"}
NO_OPERANDS = {"rlx.constant"}


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_every_op_has_a_jvp_rule(op):
    if op.name in NO_JVP:
        assert op not in JVP, f"{op.name} has a rule now: remove it from NO_JVP"
        return
    assert op in JVP or op in PREPARE_AD or op.name in STRUCTURAL, f"{op.name}: no JVP rule"


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_every_op_has_a_batching_rule(op):
    if op.name in STRUCTURAL | NO_OPERANDS:
        return
    assert op in VMAP or op in PREPARE_AD, f"{op.name} has no batching rule"


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda op: op.name)
def test_every_op_has_a_lowering(op):
    if op.name in STRUCTURAL:
        return
    assert op in LOWER, f"{op.name} has no lowering to linalg"


def test_generated_docs_are_up_to_date():
    done = subprocess.run([sys.executable, "-m", "rlx_mlir.tools.gen_docs", "--check"],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
