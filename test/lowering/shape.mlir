// Lowering of the shape family: rlx -> linalg/tensor/scf on tensors, and on to LLVM.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM

// NORLX-NOT: {{= rlx\.}}
// LLVM-NOT: linalg.
// LLVM-NOT: tensor.
// LLVM-NOT: scf.

// Reshapes are views: a pure collapse, a pure expand, and (for 2x3x4 -> 6x2x2) a
// collapse to the common groups [6, 4] followed by an expand; rank 0 <-> 1x1 moves the
// one element (extract + from_elements: xDSL rejects rank-0 reassociations).
// CHECK-LABEL: func.func @reshapes
// CHECK: tensor.collapse_shape %x {{\[}}[0 : i64, 1 : i64], [2 : i64]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: tensor.expand_shape %x {{\[}}[0 : i64], [1 : i64], [2 : i64, 3 : i64]] output_shape [2, 3, 1, 4] : tensor<2x3x4xf32> into tensor<2x3x1x4xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %x {{\[}}[0 : i64, 1 : i64], [2 : i64]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK-NEXT: tensor.expand_shape %[[C]] {{\[}}[0 : i64], [1 : i64, 2 : i64]] output_shape [6, 2, 2] : tensor<6x4xf32> into tensor<6x2x2xf32>
// CHECK: %[[E:.*]] = tensor.extract %s[] : tensor<f32>
// CHECK-NEXT: tensor.from_elements %[[E]] : tensor<1x1xf32>
// CHECK: %[[Z:.*]] = arith.constant 0 : index
// CHECK: %[[E2:.*]] = tensor.extract %{{.*}}[%[[Z]], %[[Z]]] : tensor<1x1xf32>
// CHECK-NEXT: tensor.from_elements %[[E2]] : tensor<f32>
// CHECK-NOT: linalg.
// CHECK: func.return
// LLVM-LABEL: llvm.func @reshapes
func.func @reshapes(%x: tensor<2x3x4xf32>, %s: tensor<f32>) -> (tensor<6x4xf32>, tensor<2x3x1x4xf32>, tensor<6x2x2xf32>, tensor<f32>) {
  %0 = rlx.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = rlx.reshape %x : (tensor<2x3x4xf32>) -> tensor<2x3x1x4xf32>
  %2 = rlx.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x2x2xf32>
  %3 = rlx.reshape %s : (tensor<f32>) -> tensor<1x1xf32>
  %4 = rlx.reshape %3 : (tensor<1x1xf32>) -> tensor<f32>
  func.return %0, %1, %2, %4 : tensor<6x4xf32>, tensor<2x3x1x4xf32>, tensor<6x2x2xf32>, tensor<f32>
}

// transpose is linalg.transpose (negative perm entries normalised); expand reads the
// [3, 1] bool operand through (d0, d1, d2) -> (d1, 0) and stays i1 before the hand-off.
// CHECK-LABEL: func.func @transpose_expand
// CHECK: linalg.transpose ins(%x:tensor<2x3x4xf32>) outs(%{{.*}}:tensor<4x2x3xf32>) permutation = [2, 0, 1]
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, 0)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y : tensor<3x1xi1>) outs(%{{.*}} : tensor<2x3x4xi1>)
// CHECK-NEXT: ^{{.*}}(%[[IN:.*]]: i1, %{{.*}}: i1):
// CHECK-NEXT: linalg.yield %[[IN]] : i1
func.func @transpose_expand(%x: tensor<2x3x4xf32>, %y: tensor<3x1xi1>) -> (tensor<4x2x3xf32>, tensor<2x3x4xi1>) {
  %0 = rlx.transpose %x {perm = array<i64: -1, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = rlx.expand %y : (tensor<3x1xi1>) -> tensor<2x3x4xi1>
  func.return %0, %1 : tensor<4x2x3xf32>, tensor<2x3x4xi1>
}

// concat is one tensor.concat; narrow an extract_slice at the start along the axis.
// CHECK-LABEL: func.func @concat_narrow
// CHECK: tensor.concat dim(1) %a, %b, %a : (tensor<2x3xi64>, tensor<2x5xi64>, tensor<2x3xi64>) -> tensor<2x11xi64>
// CHECK: tensor.extract_slice %b[0, 2] [2, 3] [1, 1] : tensor<2x5xi64> to tensor<2x3xi64>
func.func @concat_narrow(%a: tensor<2x3xi64>, %b: tensor<2x5xi64>) -> (tensor<2x11xi64>, tensor<2x3xi64>) {
  %0 = rlx.concat %a, %b, %a {axis = -1 : i64} : (tensor<2x3xi64>, tensor<2x5xi64>, tensor<2x3xi64>) -> tensor<2x11xi64>
  %1 = rlx.narrow %b {axis = 1 : i64, start = 2 : i64, length = 3 : i64} : (tensor<2x5xi64>) -> tensor<2x3xi64>
  func.return %0, %1 : tensor<2x11xi64>, tensor<2x3xi64>
}

// gather on axis 1 of [5, 3] with [2, 2] f32 indices: a parallel generic over the
// [5, 2, 2] output reading the indices at (d1, d2); NaN -> -1, clip, truncate (fptosi),
// clamp to [0, 2], then tensor.extract of the table at (d0, index).
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ids : tensor<2x2xf32>)
// CHECK: arith.cmpf une
// CHECK: arith.select
// CHECK: arith.fptosi %{{.*}} : f32 to i64
// CHECK: arith.maxsi
// CHECK: %[[HI:.*]] = arith.constant 2 : i64
// CHECK-NEXT: %[[ROW:.*]] = arith.minsi %{{.*}}, %[[HI]] : i64
// CHECK-NEXT: %[[IDX:.*]] = arith.index_cast %[[ROW]] : i64 to index
// CHECK-NEXT: %[[D0:.*]] = linalg.index 0 : index
// CHECK-NEXT: %[[V:.*]] = tensor.extract %t[%[[D0]], %[[IDX]]] : tensor<5x3xf32>
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @gather(%t: tensor<5x3xf32>, %ids: tensor<2x2xf32>) -> tensor<5x2x2xf32> {
  %0 = rlx.gather %t, %ids {axis = 1 : i64} : (tensor<5x3xf32>, tensor<2x2xf32>) -> tensor<5x2x2xf32>
  func.return %0 : tensor<5x2x2xf32>
}

// gather on axis 0 of rows of 16 elements ([6, 2, 8]) by [3] i64 ids: the rows are copied
// whole, a forall over the index positions each reading its id, clamping it to [0, 5] and
// slicing that row of the [6, 16] table into its place of the [3, 16] result.
// CHECK-LABEL: func.func @gather_rows
// CHECK: %[[ROWS:.*]] = tensor.expand_shape %{{.*}} output_shape [6, 16] : tensor<96xf32> into tensor<6x16xf32>
// CHECK: "scf.forall"
// CHECK-SAME: staticUpperBound = array<i64: 3, 1>
// CHECK-NEXT: ^{{.*}}(%[[I:.*]]: index, %{{.*}}: index, %[[OUT:.*]]: tensor<3x16xf32>):
// CHECK-NEXT: %[[ID:.*]] = tensor.extract %ids[%[[I]]] : tensor<3xi64>
// CHECK: arith.maxsi %[[ID]]
// CHECK: %[[HI:.*]] = arith.constant 5 : i64
// CHECK-NEXT: %[[AT:.*]] = arith.minsi %{{.*}}, %[[HI]] : i64
// CHECK-NEXT: %[[ROW:.*]] = arith.index_cast %[[AT]] : i64 to index
// CHECK-NEXT: %[[TILE:.*]] = tensor.extract_slice %[[ROWS]][%[[ROW]], 0] [1, 16] [1, 1]
// CHECK: "tensor.parallel_insert_slice"(%[[TILE]], %[[OUT]], %[[I]])
// CHECK: tensor.expand_shape %{{.*}} output_shape [3, 2, 8] : tensor<48xf32> into tensor<3x2x8xf32>
func.func @gather_rows(%t: tensor<6x2x8xf32>, %ids: tensor<3xi64>) -> tensor<3x2x8xf32> {
  %0 = rlx.gather %t, %ids {axis = 0 : i64} : (tensor<6x2x8xf32>, tensor<3xi64>) -> tensor<3x2x8xf32>
  func.return %0 : tensor<3x2x8xf32>
}

// gather by a constant arithmetic progression inside the axis (what x[:, ::-2] gathers):
// a copy reading the table at 7 - 2 * d1, no index loads and no clamps.
// CHECK-LABEL: func.func @gather_progression
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, ((d1 * -2) + 7))>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>)
// CHECK-NEXT: ^{{.*}}(%[[V:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: linalg.yield %[[V]] : f32
func.func @gather_progression(%x: tensor<4x8xf32>) -> tensor<4x4xf32> {
  %i = rlx.constant {value = dense<[7, 5, 3, 1]> : tensor<4xi32>} : () -> tensor<4xi32>
  %0 = rlx.gather %x, %i {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<4x4xf32>
  func.return %0 : tensor<4x4xf32>
}

// scatter_add: zero fill, then an scf.for over the 4 index positions carrying the
// accumulator; each step checks 0 <= idx < 6, and adds the updates row into the
// accumulator row (selected only when valid) in place with extract/insert_slice.
// CHECK-LABEL: func.func @scatter_add
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[Z]]) -> (tensor<6x3xf64>)
// CHECK: tensor.extract %ids[%[[I]]] : tensor<4xi32>
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.cmpi sge
// CHECK: arith.constant 6 : i64
// CHECK: arith.cmpi slt
// CHECK: %[[OK:.*]] = arith.andi
// CHECK: %[[ROW:.*]] = arith.index_cast
// CHECK: %[[U:.*]] = tensor.extract_slice %u[%[[I]], 0] [1, 3] [1, 1] : tensor<4x3xf64> to tensor<1x3xf64>
// CHECK: %[[OLD:.*]] = tensor.extract_slice %[[ACC]][%[[ROW]], 0] [1, 3] [1, 1]
// CHECK: %[[NEW:.*]] = linalg.generic {{.*}} ins(%[[U]] : tensor<1x3xf64>) outs(%[[OLD]] : tensor<1x3xf64>)
// CHECK: ^{{.*}}(%[[UV:.*]]: f64, %[[OV:.*]]: f64):
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[OV]], %[[UV]] : f64
// CHECK-NEXT: arith.select %[[OK]], %[[SUM]], %[[OV]] : f64
// CHECK: %[[PUT:.*]] = tensor.insert_slice %[[NEW]] into %[[ACC]][%[[ROW]], 0] [1, 3] [1, 1]
// CHECK: scf.yield %[[PUT]] : tensor<6x3xf64>
// LLVM-LABEL: llvm.func @scatter_add
func.func @scatter_add(%u: tensor<4x3xf64>, %ids: tensor<4xi32>) -> tensor<6x3xf64> {
  %0 = rlx.scatter_add %u, %ids {axis = 0 : i64} : (tensor<4x3xf64>, tensor<4xi32>) -> tensor<6x3xf64>
  func.return %0 : tensor<6x3xf64>
}

// Along axis 1 the slices are columns: offsets [0, i, 0], sizes [2, 1, 3].
// CHECK-LABEL: func.func @scatter_add_axis1
// CHECK: tensor.extract_slice %u[0, %{{.*}}, 0] [2, 1, 3] [1, 1, 1] : tensor<2x4x3xi64> to tensor<2x1x3xi64>
// CHECK: arith.addi
// CHECK: tensor.insert_slice {{.*}}[0, %{{.*}}, 0] [2, 1, 3] [1, 1, 1] : tensor<2x1x3xi64> into tensor<2x5x3xi64>
func.func @scatter_add_axis1(%u: tensor<2x4x3xi64>, %ids: tensor<4xi64>) -> tensor<2x5x3xi64> {
  %0 = rlx.scatter_add %u, %ids {axis = 1 : i64} : (tensor<2x4x3xi64>, tensor<4xi64>) -> tensor<2x5x3xi64>
  func.return %0 : tensor<2x5x3xi64>
}
