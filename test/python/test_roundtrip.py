"""``rlx-opt FILE | rlx-opt`` prints the same IR as ``rlx-opt FILE`` for every op test file."""

from pathlib import Path

import pytest

from rlx_mlir.ir import parse, to_text

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for p in (ROOT / "test" / "dialect").glob("*.mlir") if "invalid" not in p.name)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_print_parse_print_is_stable(path):
    for chunk in path.read_text().split("// -----"):
        once = to_text(parse(chunk, str(path)))
        assert to_text(parse(once)) == once
        generic = to_text(parse(once), generic=True)
        assert to_text(parse(generic)) == once
