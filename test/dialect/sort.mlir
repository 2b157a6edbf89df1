// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=LOWERED
// RUN: rlx-run %s --entry ties | FileCheck %s --check-prefix=NATIVE
// RUN: rlx-run %s --entry ties --interpret | FileCheck %s --check-prefix=NATIVE

// rlx.top_k: i32 indices of the k largest along the last axis, any leading dims.
// CHECK-LABEL: func.func @top_k
// CHECK: rlx.top_k %{{.*}} {k = 2 : i64} : (tensor<3x5xf32>) -> tensor<3x2xi32>
// CHECK: rlx.top_k %{{.*}} {k = 4 : i64} : (tensor<2x3x4xi32>) -> tensor<2x3x4xi32>
// GENERIC: "rlx.top_k"(%{{.*}}) {k = 2 : i64} : (tensor<3x5xf32>) -> tensor<3x2xi32>
func.func @top_k(%x: tensor<3x5xf32>, %n: tensor<2x3x4xi32>) -> (tensor<3x2xi32>, tensor<2x3x4xi32>) {
  %0 = rlx.top_k %x {k = 2 : i64} : (tensor<3x5xf32>) -> tensor<3x2xi32>
  %1 = rlx.top_k %n {k = 4 : i64} : (tensor<2x3x4xi32>) -> tensor<2x3x4xi32>
  func.return %0, %1 : tensor<3x2xi32>, tensor<2x3x4xi32>
}

// Lowered: one pass per row, an insertion into the sorted buffer (scf.while shifting the
// smaller ones down) only for an entry that beats the k-th.
// LOWERED-LABEL: func.func @ties
// LOWERED: scf.for
// LOWERED: scf.if
// LOWERED: scf.while
// LOWERED-NOT: rlx.
// Ties go to the smaller index, NaN is the largest, -0.0 is below +0.0 (JAX's order).
// NATIVE: result 0: tensor<2x3xi32>
// NATIVE-NEXT: {{\[\[}}3, 1, 2],
// NATIVE-NEXT: [5, 4, 0]]
func.func @ties() -> tensor<2x3xi32> {
  %x = rlx.constant {value = dense<[[1.0, 3.0, 3.0, 0x7FC00000, -0.0, 0.0], [-0.0, -1.0, -2.0, -3.0, 0.0, 1.0]]> : tensor<2x6xf32>} : () -> tensor<2x6xf32>
  %0 = rlx.top_k %x {k = 3 : i64} : (tensor<2x6xf32>) -> tensor<2x3xi32>
  func.return %0 : tensor<2x3xi32>
}
