// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | rlx-opt | FileCheck %s

// One right-hand side (rank-1 B) and several (rank-2 B), f32 and f64.
// CHECK-LABEL: func.func @dense
// CHECK: rlx.dense_solve %{{.*}}, %{{.*}} : (tensor<3x3xf64>, tensor<3xf64>) -> tensor<3xf64>
// CHECK: rlx.dense_solve %{{.*}}, %{{.*}} : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
// GENERIC: "rlx.dense_solve"(%{{.*}}, %{{.*}}) : (tensor<3x3xf64>, tensor<3xf64>) -> tensor<3xf64>
// UPSTREAM: "rlx.dense_solve"(%{{.*}}, %{{.*}}) : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
func.func @dense(%a: tensor<3x3xf64>, %b: tensor<3xf64>, %p: tensor<4x4xf32>, %q: tensor<4x2xf32>) -> (tensor<3xf64>, tensor<4x2xf32>) {
  %0 = rlx.dense_solve %a, %b : (tensor<3x3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %1 = rlx.dense_solve %p, %q : (tensor<4x4xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  func.return %0, %1 : tensor<3xf64>, tensor<4x2xf32>
}

// CHECK-LABEL: func.func @batched
// CHECK: rlx.batched_dense_solve %{{.*}}, %{{.*}} : (tensor<5x3x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
// CHECK: rlx.batched_dense_solve %{{.*}}, %{{.*}} : (tensor<2x4x4xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
// GENERIC: "rlx.batched_dense_solve"(%{{.*}}, %{{.*}}) : (tensor<5x3x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
// UPSTREAM: "rlx.batched_dense_solve"(%{{.*}}, %{{.*}}) : (tensor<2x4x4xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
func.func @batched(%a: tensor<5x3x3xf32>, %b: tensor<5x3xf32>, %p: tensor<2x4x4xf64>, %q: tensor<2x4x6xf64>) -> (tensor<5x3xf32>, tensor<2x4x6xf64>) {
  %0 = rlx.batched_dense_solve %a, %b : (tensor<5x3x3xf32>, tensor<5x3xf32>) -> tensor<5x3xf32>
  %1 = rlx.batched_dense_solve %p, %q : (tensor<2x4x4xf64>, tensor<2x4x6xf64>) -> tensor<2x4x6xf64>
  func.return %0, %1 : tensor<5x3xf32>, tensor<2x4x6xf64>
}
