// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @matmul
// CHECK: rlx.matmul %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK: rlx.matmul %{{.*}}, %{{.*}} : (tensor<2x5x8xf32>, tensor<8x3xf32>) -> tensor<2x5x3xf32>
// CHECK: rlx.matmul %{{.*}}, %{{.*}} : (tensor<2x1x4x8xf64>, tensor<6x8x3xf64>) -> tensor<2x6x4x3xf64>
// CHECK: rlx.matmul %{{.*}}, %{{.*}} : (tensor<2x3xi64>, tensor<3x2xi64>) -> tensor<2x2xi64>
// GENERIC: "rlx.matmul"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// UPSTREAM: "rlx.matmul"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// UPSTREAM: "rlx.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x1x4x8xf64>, tensor<6x8x3xf64>) -> tensor<2x6x4x3xf64>
func.func @matmul(%a: tensor<4x8xf32>, %w: tensor<8x3xf32>, %x: tensor<2x5x8xf32>,
                  %p: tensor<2x1x4x8xf64>, %q: tensor<6x8x3xf64>, %i: tensor<2x3xi64>,
                  %j: tensor<3x2xi64>) -> (tensor<4x3xf32>, tensor<2x5x3xf32>, tensor<2x6x4x3xf64>, tensor<2x2xi64>) {
  %0 = rlx.matmul %a, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = rlx.matmul %x, %w : (tensor<2x5x8xf32>, tensor<8x3xf32>) -> tensor<2x5x3xf32>
  %2 = rlx.matmul %p, %q : (tensor<2x1x4x8xf64>, tensor<6x8x3xf64>) -> tensor<2x6x4x3xf64>
  %3 = rlx.matmul %i, %j : (tensor<2x3xi64>, tensor<3x2xi64>) -> tensor<2x2xi64>
  func.return %0, %1, %2, %3 : tensor<4x3xf32>, tensor<2x5x3xf32>, tensor<2x6x4x3xf64>, tensor<2x2xi64>
}

// CHECK-LABEL: func.func @reduce
// CHECK: rlx.reduce_sum %{{.*}} {axes = array<i64: 0, 2>} : (tensor<2x3x4x5xf32>) -> tensor<3x5xf32>
// CHECK: rlx.reduce_mean %{{.*}} {axes = array<i64: -1, 1>, keep_dims = true} : (tensor<2x3x4x5xf32>) -> tensor<2x1x4x1xf32>
// CHECK: rlx.reduce_max %{{.*}} {axes = array<i64: 3>, keep_dims = false} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4xf32>
// CHECK: rlx.reduce_min %{{.*}} {axes = array<i64: 0, 1, 2, 3>} : (tensor<2x3x4x5xf32>) -> tensor<f32>
// CHECK: rlx.reduce_prod %{{.*}} {axes = array<i64: 1>} : (tensor<3x4xi32>) -> tensor<3xi32>
// GENERIC: "rlx.reduce_sum"(%{{.*}}) {axes = array<i64: 0, 2>} : (tensor<2x3x4x5xf32>) -> tensor<3x5xf32>
// UPSTREAM: "rlx.reduce_sum"(%{{.*}}) {axes = array<i64: 0, 2>} : (tensor<2x3x4x5xf32>) -> tensor<3x5xf32>
// UPSTREAM: "rlx.reduce_mean"(%{{.*}}) {axes = array<i64: -1, 1>, keep_dims = true} : (tensor<2x3x4x5xf32>) -> tensor<2x1x4x1xf32>
// UPSTREAM: "rlx.reduce_max"(%{{.*}}) {axes = array<i64: 3>, keep_dims = false}
// UPSTREAM: "rlx.reduce_min"
// UPSTREAM: "rlx.reduce_prod"
func.func @reduce(%x: tensor<2x3x4x5xf32>, %n: tensor<3x4xi32>) -> (tensor<3x5xf32>, tensor<2x1x4x1xf32>, tensor<2x3x4xf32>, tensor<f32>, tensor<3xi32>) {
  %0 = rlx.reduce_sum %x {axes = array<i64: 0, 2>} : (tensor<2x3x4x5xf32>) -> tensor<3x5xf32>
  %1 = rlx.reduce_mean %x {axes = array<i64: -1, 1>, keep_dims = true} : (tensor<2x3x4x5xf32>) -> tensor<2x1x4x1xf32>
  %2 = rlx.reduce_max %x {axes = array<i64: 3>, keep_dims = false} : (tensor<2x3x4x5xf32>) -> tensor<2x3x4xf32>
  %3 = rlx.reduce_min %x {axes = array<i64: 0, 1, 2, 3>} : (tensor<2x3x4x5xf32>) -> tensor<f32>
  %4 = rlx.reduce_prod %n {axes = array<i64: 1>} : (tensor<3x4xi32>) -> tensor<3xi32>
  func.return %0, %1, %2, %3, %4 : tensor<3x5xf32>, tensor<2x1x4x1xf32>, tensor<2x3x4xf32>, tensor<f32>, tensor<3xi32>
}

// CHECK-LABEL: func.func @cumsum
// CHECK: rlx.cumsum %{{.*}} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: rlx.cumsum %{{.*}} {axis = 0 : i64, exclusive = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: rlx.cumsum %{{.*}} {axis = -2 : i64} : (tensor<4x3xf64>) -> tensor<4x3xf64>
// GENERIC: "rlx.cumsum"(%{{.*}}) {axis = 0 : i64, exclusive = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// UPSTREAM: "rlx.cumsum"(%{{.*}}) {axis = 0 : i64, exclusive = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @cumsum(%x: tensor<4x3xf32>, %d: tensor<4x3xf64>) -> (tensor<4x3xf32>, tensor<4x3xf64>) {
  %0 = rlx.cumsum %x : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = rlx.cumsum %0 {axis = 0 : i64, exclusive = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %2 = rlx.cumsum %d {axis = -2 : i64} : (tensor<4x3xf64>) -> tensor<4x3xf64>
  func.return %1, %2 : tensor<4x3xf32>, tensor<4x3xf64>
}
