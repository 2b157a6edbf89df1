// Lowering of the linalg family and the indexing backward ops: rlx -> linalg on tensors,
// and on to LLVM (verified by mlir-opt).
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM

// NORLX-NOT: {{= rlx\.}}
// LLVM-NOT: linalg.
// LLVM-NOT: scf.
// LLVM: llvm.func @_mlir_ciface_matmuls

// 2-D -> linalg.matmul into a zero fill. [B, S, K] @ [K, N] folds B*S into rows of one
// linalg.matmul (collapse/expand views, the weight is read as is). Equal batches ->
// linalg.batch_matmul on the folded batch. A real batch broadcast -> one generic
// contraction whose maps read a's batch dim 1 at 0 and drop b's missing dim (no copies).
// CHECK-LABEL: func.func @matmuls
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK-NEXT: linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x3xf32>) outs(%[[Z]] : tensor<4x3xf32>)
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %x {{\[}}[0 : i64, 1 : i64], [2 : i64]] : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK: %[[MM:.*]] = linalg.matmul ins(%[[ROWS]], %w : tensor<8x8xf32>, tensor<8x3xf32>)
// CHECK: tensor.expand_shape %[[MM]] {{\[}}[0 : i64, 1 : i64], [2 : i64]] output_shape [2, 4, 3] : tensor<8x3xf32> into tensor<2x4x3xf32>
// CHECK: %[[BA:.*]] = tensor.collapse_shape %p {{\[}}[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<2x3x4x8xf64> into tensor<6x4x8xf64>
// CHECK: %[[BB:.*]] = tensor.collapse_shape %q {{\[}}[0 : i64, 1 : i64], [2 : i64], [3 : i64]] : tensor<2x3x8x5xf64> into tensor<6x8x5xf64>
// CHECK: linalg.batch_matmul ins(%[[BA]], %[[BB]] : tensor<6x4x8xf64>, tensor<6x8x5xf64>)
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%u, %v : tensor<2x1x4x3xi32>, tensor<6x3x5xi32>)
// CHECK: arith.muli
// CHECK-NEXT: arith.addi
// CHECK-NOT: linalg.transpose
// CHECK: func.return
func.func @matmuls(%a: tensor<4x8xf32>, %w: tensor<8x3xf32>, %x: tensor<2x4x8xf32>,
                   %p: tensor<2x3x4x8xf64>, %q: tensor<2x3x8x5xf64>,
                   %u: tensor<2x1x4x3xi32>, %v: tensor<6x3x5xi32>)
    -> (tensor<4x3xf32>, tensor<2x4x3xf32>, tensor<2x3x4x5xf64>, tensor<2x6x4x5xi32>) {
  %0 = rlx.matmul %a, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = rlx.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x3xf32>) -> tensor<2x4x3xf32>
  %2 = rlx.matmul %p, %q : (tensor<2x3x4x8xf64>, tensor<2x3x8x5xf64>) -> tensor<2x3x4x5xf64>
  %3 = rlx.matmul %u, %v : (tensor<2x1x4x3xi32>, tensor<6x3x5xi32>) -> tensor<2x6x4x5xi32>
  func.return %0, %1, %2, %3 : tensor<4x3xf32>, tensor<2x4x3xf32>, tensor<2x3x4x5xf64>, tensor<2x6x4x5xi32>
}

// Each reduction is a linalg.reduce from its identity: sum 0, prod 1, max -inf, min
// +inf (float), the int limits for integers; keep_dims expands the result back; mean
// divides the sum by the count (2 * 4 = 8) as a constant of the op's dtype.
// CHECK-LABEL: func.func @reductions
// CHECK: arith.constant 0.000000e+00 : f32
// CHECK: linalg.reduce ins(%x:tensor<2x3x4xf32>) outs(%{{.*}}:tensor<3xf32>) dimensions = [0, 2]
// CHECK: arith.addf
// CHECK: arith.constant 0xff800000 : f32
// CHECK: linalg.reduce ins(%x:tensor<2x3x4xf32>) outs(%{{.*}}:tensor<2x3xf32>) dimensions = [2]
// CHECK: arith.maximumf
// CHECK: tensor.expand_shape {{.*}} output_shape [2, 3, 1] : tensor<6xf32> into tensor<2x3x1xf32>
// CHECK: arith.constant 0x7f800000 : f32
// CHECK: arith.minimumf
// CHECK: arith.constant 1.000000e+00 : f32
// CHECK: arith.mulf
// CHECK: linalg.reduce ins(%x:tensor<2x3x4xf32>) outs(%{{.*}}:tensor<3xf32>) dimensions = [0, 2]
// the mean over 8 elements: a product by the exact reciprocal (2^-3), not a division
// CHECK: arith.constant 1.250000e-01 : f32
// CHECK-NEXT: arith.mulf
// CHECK: arith.constant -2147483648 : i32
// CHECK: arith.maxsi
// CHECK: arith.constant 9223372036854775807 : i64
// CHECK: arith.minsi
func.func @reductions(%x: tensor<2x3x4xf32>, %i: tensor<5xi32>, %l: tensor<2x2xi64>)
    -> (tensor<3xf32>, tensor<2x3x1xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<i32>, tensor<2xi64>) {
  %0 = rlx.reduce_sum %x {axes = array<i64: 0, -1>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_max %x {axes = array<i64: 2>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %2 = rlx.reduce_min %x {axes = array<i64: 1>} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %3 = rlx.reduce_prod %x {axes = array<i64: 2>} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %4 = rlx.reduce_mean %x {axes = array<i64: 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %5 = rlx.reduce_max %i {axes = array<i64: 0>} : (tensor<5xi32>) -> tensor<i32>
  %6 = rlx.reduce_min %l {axes = array<i64: 1>} : (tensor<2x2xi64>) -> tensor<2xi64>
  func.return %0, %1, %2, %3, %4, %5, %6 : tensor<3xf32>, tensor<2x3x1xf32>, tensor<2x4xf32>, tensor<2x3xf32>, tensor<3xf32>, tensor<i32>, tensor<2xi64>
}

// cumsum: one scf.for over the axis carrying (result, running slice); inclusive adds
// the slice x[i] into the running sum in place and writes the sum at i. Along the
// innermost axis it runs on the transpose (whole rows per step, not strided columns)
// and transposes the result back.
// CHECK-LABEL: func.func @cumsum_inclusive
// CHECK: %[[XT:.*]] = linalg.transpose ins(%x:tensor<3x4xf32>) outs(%{{.*}}:tensor<4x3xf32>) permutation = [1, 0]
// CHECK: %[[ACC0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x3xf32>)
// CHECK: arith.constant 4 : index
// CHECK: %[[RES:[0-9]+]], %{{.*}} = scf.for %[[I:[0-9]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[OUT:[0-9]+]] = %{{.*}}, %[[ACC:[0-9]+]] = %[[ACC0]]) -> (tensor<4x3xf32>, tensor<1x3xf32>)
// CHECK-NEXT: %[[XI:.*]] = tensor.extract_slice %[[XT]][%[[I]], 0] [1, 3] [1, 1] : tensor<4x3xf32> to tensor<1x3xf32>
// CHECK-NEXT: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[XI]] : tensor<1x3xf32>) outs(%[[ACC]] : tensor<1x3xf32>)
// CHECK: arith.addf
// CHECK: %[[W:.*]] = tensor.insert_slice %[[SUM]] into %[[OUT]][%[[I]], 0] [1, 3] [1, 1]
// CHECK-NEXT: scf.yield %[[W]], %[[SUM]]
// CHECK: linalg.transpose ins(%[[RES]]:tensor<4x3xf32>) outs(%{{.*}}:tensor<3x4xf32>) permutation = [1, 0]
func.func @cumsum_inclusive(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = rlx.cumsum %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %0 : tensor<3x4xf32>
}

// Exclusive writes the running sum before adding; cumsum_backward walks the axis from
// its end (position = 2 - i) for the reverse running sum.
// CHECK-LABEL: func.func @cumsum_exclusive_and_backward
// CHECK: scf.for %[[I:[0-9]+]] = {{.*}} iter_args(%[[OUT:[0-9]+]] = %{{.*}}, %[[ACC:[0-9]+]] = %{{.*}}) -> (tensor<3x2xi64>, tensor<1x2xi64>)
// CHECK-NEXT: tensor.insert_slice %[[ACC]] into %[[OUT]][%[[I]], 0] [1, 2] [1, 1]
// CHECK-NEXT: tensor.extract_slice %x[%[[I]], 0] [1, 2] [1, 1]
// CHECK: arith.addi
// CHECK: scf.for %[[J:[0-9]+]] = {{.*}} -> (tensor<3x2xi64>, tensor<1x2xi64>)
// CHECK-NEXT: %[[LAST:.*]] = arith.constant 2 : index
// CHECK-NEXT: %[[P:.*]] = arith.subi %[[LAST]], %[[J]] : index
// CHECK: tensor.extract_slice %x[%[[P]], 0] [1, 2] [1, 1]
// CHECK: tensor.insert_slice %{{.*}}[%[[P]], 0] [1, 2] [1, 1]
func.func @cumsum_exclusive_and_backward(%x: tensor<3x2xi64>) -> (tensor<3x2xi64>, tensor<3x2xi64>) {
  %0 = rlx.cumsum %x {axis = 0 : i64, exclusive = true} : (tensor<3x2xi64>) -> tensor<3x2xi64>
  %1 = rlx.cumsum_backward %x {axis = -2 : i64} : (tensor<3x2xi64>) -> tensor<3x2xi64>
  func.return %0, %1 : tensor<3x2xi64>, tensor<3x2xi64>
}

// gather_backward: a zero-filled table, one scf.for over the numel(indices) = 6 flat index
// positions; each reads idx[k], clamps it like gather (ordered compares: NaN -> 0; then
// fptosi), and adds the slice dy[:, k] into the table's row in place.
// CHECK-LABEL: func.func @gather_backward
// CHECK: %[[IDS:.*]] = tensor.collapse_shape %ids {{.*}} : tensor<2x3xf32> into tensor<6xf32>
// CHECK: %[[DY:.*]] = tensor.collapse_shape %dy {{.*}} : tensor<4x2x3xf32> into tensor<24xf32>
// CHECK: %[[DYF:.*]] = tensor.expand_shape %[[DY]] {{.*}} output_shape [4, 6] : tensor<24xf32> into tensor<4x6xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x10xf32>)
// CHECK: arith.constant 6 : index
// CHECK: scf.for %[[K:[0-9]+]] = {{.*}} iter_args(%[[T:[0-9]+]] = %[[ZERO]]) -> (tensor<4x10xf32>)
// CHECK-NEXT: %[[RAW:.*]] = tensor.extract %[[IDS]][%[[K]]] : tensor<6xf32>
// CHECK: arith.cmpf oge, %[[RAW]]
// CHECK: arith.constant 9.000000e+00 : f32
// CHECK: arith.cmpf ole
// CHECK: %[[ROW:.*]] = arith.fptosi %{{.*}} : f32 to i64
// CHECK: %[[R:.*]] = arith.index_cast %[[ROW]] : i64 to index
// CHECK: %[[PART:.*]] = tensor.extract_slice %[[DYF]][0, %[[K]]] [4, 1] [1, 1] : tensor<4x6xf32> to tensor<4x1xf32>
// CHECK: %[[DST:.*]] = tensor.extract_slice %[[T]][0, %[[R]]] [4, 1] [1, 1] : tensor<4x10xf32> to tensor<4x1xf32>
// CHECK: %[[ADD:.*]] = linalg.generic {{.*}} ins(%[[PART]] : tensor<4x1xf32>) outs(%[[DST]] : tensor<4x1xf32>)
// CHECK: tensor.insert_slice %[[ADD]] into %[[T]][0, %[[R]]] [4, 1] [1, 1]
func.func @gather_backward(%dy: tensor<4x2x3xf32>, %ids: tensor<2x3xf32>) -> tensor<4x10xf32> {
  %0 = rlx.gather_backward %dy, %ids {axis = 1 : i64} : (tensor<4x2x3xf32>, tensor<2x3xf32>) -> tensor<4x10xf32>
  func.return %0 : tensor<4x10xf32>
}

// Integer indices clamp with minsi / maxsi.
// CHECK-LABEL: func.func @gather_backward_int_ids
// CHECK: scf.for
// CHECK: %[[RAW:.*]] = tensor.extract %ids[%{{.*}}] : tensor<3xi32>
// CHECK-NEXT: %[[HI:.*]] = arith.constant 4 : i32
// CHECK-NEXT: %[[LO:.*]] = arith.minsi %[[RAW]], %[[HI]] : i32
// CHECK: arith.maxsi %[[LO]]
// CHECK: arith.index_cast %{{.*}} : i32 to index
func.func @gather_backward_int_ids(%dy: tensor<3x2xf64>, %ids: tensor<3xi32>) -> tensor<5x2xf64> {
  %0 = rlx.gather_backward %dy, %ids : (tensor<3x2xf64>, tensor<3xi32>) -> tensor<5x2xf64>
  func.return %0 : tensor<5x2xf64>
}
