// Lowering of the solve family: LU with partial pivoting as scf.for loops over tensors.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM

// NORLX-NOT: {{= rlx\.}}
// LLVM-NOT: scf.for
// LLVM-NOT: tensor.

// The elimination carries A, B and the singular flag; the pivot search carries the
// best row and its |value|; the NaN constant is what a singular system yields.
// CHECK-LABEL: func.func @dense
// CHECK: %[[F:.*]] = arith.constant false
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %a, %{{.*}} = %b, %{{.*}} = %[[F]]) -> (tensor<3x3xf64>, tensor<3x2xf64>, i1)
// CHECK: scf.for {{.*}} -> (index, f64)
// CHECK: math.absf
// CHECK: arith.cmpf ogt
// CHECK: arith.divf
// CHECK: arith.cmpf oeq
// CHECK: arith.ori
// CHECK: arith.constant 0x7ff8000000000000 : f64
// CHECK: arith.select
// CHECK: tensor.insert
// LLVM-LABEL: llvm.func @dense
// LLVM-LABEL: llvm.func @_mlir_ciface_dense
func.func @dense(%a: tensor<3x3xf64>, %b: tensor<3x2xf64>) -> tensor<3x2xf64> {
  %x = rlx.dense_solve %a, %b : (tensor<3x3xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  func.return %x : tensor<3x2xf64>
}

// Batched: one more loop over the slices; a rank-2 B is indexed [slice, row].
// CHECK-LABEL: func.func @batched
// CHECK: scf.for %[[S:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %a, %{{.*}} = %b) -> (tensor<4x2x2xf32>, tensor<4x2xf32>)
// CHECK: tensor.extract %{{.*}}[%[[S]], %{{.*}}, %{{.*}}] : tensor<4x2x2xf32>
// CHECK: arith.constant 0x7fc00000 : f32
// LLVM-LABEL: llvm.func @batched
func.func @batched(%a: tensor<4x2x2xf32>, %b: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %x = rlx.batched_dense_solve %a, %b : (tensor<4x2x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  func.return %x : tensor<4x2xf32>
}
