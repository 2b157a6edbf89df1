"""Upstream linalg named ops that xDSL 0.74 does not define (printed for the hand-off).

``linalg.batch_matmul`` keeps batched contractions structured (tileable, vectorizable)::

    %c = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>)
                             outs(%acc : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import AffineMapAttr, ArrayAttr
from xdsl.dialects.linalg.abstract_ops import NamedOperation
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import MatmulOp
from xdsl.ir import Attribute, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.irdl import irdl_op_definition, prop_def


@irdl_op_definition
class BatchMatmulOp(NamedOperation):
    """``C[b, i, j] += A[b, i, k] * B[b, k, j]`` (same body as ``linalg.matmul``)."""

    name = "linalg.batch_matmul"

    indexing_maps = prop_def(
        ArrayAttr[AffineMapAttr],
        default_value=ArrayAttr([
            AffineMapAttr(AffineMap.from_callable(lambda b, i, _, k: (b, i, k))),
            AffineMapAttr(AffineMap.from_callable(lambda b, _, j, k: (b, k, j))),
            AffineMapAttr(AffineMap.from_callable(lambda b, i, j, _: (b, i, j))),
        ]),
    )
    PRINT_ATTRS_IN_FRONT: ClassVar[bool] = True

    def __init__(self, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue] = (),
                 res: Sequence[Attribute] | None = None):
        result_types = res if res is not None else [v.type for v in outputs]
        super().__init__(
            ins=inputs, outs=outputs, result_types=result_types,
            hidden_region=self.get_hidden_region(inputs, outputs),
        )

    @classmethod
    def get_hidden_region(cls, inputs: Sequence[SSAValue], outputs: Sequence[SSAValue]) -> Region:
        return MatmulOp.get_hidden_region(inputs, outputs)

    def get_default_indexing_maps(self) -> Sequence[AffineMap]:
        return tuple(m.data for m in self.indexing_maps.data)

    def get_indexing_maps(self) -> ArrayAttr[AffineMapAttr]:
        return self.indexing_maps

    def get_iterator_types(self) -> ArrayAttr[IteratorTypeAttr]:
        return ArrayAttr([IteratorTypeAttr.parallel()] * 3 + [IteratorTypeAttr.reduction()])
