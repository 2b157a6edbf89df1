// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | rlx-opt | FileCheck %s

// A 0-d key draws the whole result; a key of shape K draws K + S (one sample per key).
// CHECK-LABEL: func.func @draws
// CHECK: rlx.rng_uniform %{{.*}} : (tensor<i32>) -> tensor<4x8xf32>
// CHECK: rlx.rng_normal %{{.*}} : (tensor<3xi32>) -> tensor<3x16xf64>
// GENERIC: "rlx.rng_uniform"(%{{.*}}) : (tensor<i32>) -> tensor<4x8xf32>
func.func @draws(%key: tensor<i32>, %keys: tensor<3xi32>) -> (tensor<4x8xf32>, tensor<3x16xf64>) {
  %u = rlx.rng_uniform %key : (tensor<i32>) -> tensor<4x8xf32>
  %n = rlx.rng_normal %keys : (tensor<3xi32>) -> tensor<3x16xf64>
  func.return %u, %n : tensor<4x8xf32>, tensor<3x16xf64>
}
