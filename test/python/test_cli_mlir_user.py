"""The command-line tools used like mlir-opt: round trips, inputs, diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir.diagnostics import RlxError
from rlx_mlir.interpreter import interpret
from rlx_mlir.ir import parse, to_text


def _with_inf_nan(x: np.ndarray) -> np.ndarray:
    return x + np.array([-np.inf, 1.0, np.nan], np.float32)


def test_inf_nan_constants_survive_print_and_reparse() -> None:
    """Hex dense floats (``0xff800000``) are bit patterns, not the integer 4.29e9."""
    x = np.zeros(3, np.float32)
    text = rlx.trace(_with_inf_nan, (x,)).as_text()
    module = parse(text)
    assert to_text(module) == to_text(parse(to_text(module)))
    expected = _with_inf_nan(x)
    (interpreted,) = interpret(module, x)
    np.testing.assert_array_equal(interpreted, expected)
    np.testing.assert_array_equal(rlx.jit(_with_inf_nan)(x), expected)


@pytest.mark.parametrize("literal, element, value", [
    ("0xFF800000", "f32", -np.inf),
    ("0x3FF0000000000000", "f64", 1.0),
    ("0x7C00", "f16", np.inf),
])
def test_hex_literal_is_bit_pattern_of_element_type(literal: str, element: str,
                                                    value: float) -> None:
    text = (f'%0 = "arith.constant"() {{value = dense<[{literal}, 2.0]> : tensor<2x{element}>}}'
            f" : () -> tensor<2x{element}>")
    values = list(parse(text).body.block.first_op.value.get_values())
    assert values == [value, 2.0]


def test_hex_literal_too_wide_for_element_type_is_located() -> None:
    text = '%0 = "rlx.constant"() {value = dense<[0x1FF800000]> : tensor<1xf32>} : () -> tensor<1xf32>'
    with pytest.raises(RlxError, match="0x1ff800000 does not fit in f32") as info:
        parse(text, "t.mlir")
    assert (info.value.loc.line, info.value.loc.col) == (1, text.index("0x") + 1)
