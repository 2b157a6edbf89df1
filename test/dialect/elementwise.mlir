// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=UPSTREAM

// CHECK-LABEL: func.func @binary
// CHECK: rlx.add %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK: rlx.sub %{{.*}} : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
// CHECK: rlx.mul
// CHECK: rlx.div
// CHECK: rlx.min
// CHECK: rlx.max
// CHECK: rlx.pow
// UPSTREAM: "rlx.add"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
func.func @binary(%x: tensor<4x8xf32>, %b: tensor<8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = rlx.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = rlx.sub %0, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %2 = rlx.mul %1, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %3 = rlx.div %2, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %4 = rlx.min %3, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = rlx.max %4, %x : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %6 = rlx.pow %5, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  func.return %6 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @activations
// CHECK: rlx.relu
// CHECK: rlx.gelu
// CHECK: rlx.gelu_approx
// CHECK: rlx.silu
// CHECK: rlx.sigmoid
// CHECK: rlx.tanh
// CHECK: rlx.exp
// CHECK: rlx.log
// CHECK: rlx.sqrt
// CHECK: rlx.rsqrt
// CHECK: rlx.neg
// CHECK: rlx.abs
// CHECK: rlx.sin
// CHECK: rlx.cos
// CHECK: rlx.tan
// CHECK: rlx.atan
// CHECK: rlx.round
func.func @activations(%x: tensor<3xf64>) -> tensor<3xf64> {
  %0 = rlx.relu %x : (tensor<3xf64>) -> tensor<3xf64>
  %1 = rlx.gelu %0 : (tensor<3xf64>) -> tensor<3xf64>
  %2 = rlx.gelu_approx %1 : (tensor<3xf64>) -> tensor<3xf64>
  %3 = rlx.silu %2 : (tensor<3xf64>) -> tensor<3xf64>
  %4 = rlx.sigmoid %3 : (tensor<3xf64>) -> tensor<3xf64>
  %5 = rlx.tanh %4 : (tensor<3xf64>) -> tensor<3xf64>
  %6 = rlx.exp %5 : (tensor<3xf64>) -> tensor<3xf64>
  %7 = rlx.log %6 : (tensor<3xf64>) -> tensor<3xf64>
  %8 = rlx.sqrt %7 : (tensor<3xf64>) -> tensor<3xf64>
  %9 = rlx.rsqrt %8 : (tensor<3xf64>) -> tensor<3xf64>
  %10 = rlx.neg %9 : (tensor<3xf64>) -> tensor<3xf64>
  %11 = rlx.abs %10 : (tensor<3xf64>) -> tensor<3xf64>
  %12 = rlx.sin %11 : (tensor<3xf64>) -> tensor<3xf64>
  %13 = rlx.cos %12 : (tensor<3xf64>) -> tensor<3xf64>
  %14 = rlx.tan %13 : (tensor<3xf64>) -> tensor<3xf64>
  %15 = rlx.atan %14 : (tensor<3xf64>) -> tensor<3xf64>
  %16 = rlx.round %15 : (tensor<3xf64>) -> tensor<3xf64>
  func.return %16 : tensor<3xf64>
}

// CHECK-LABEL: func.func @select
// CHECK: rlx.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK: rlx.compare %{{.*}}, %{{.*}} {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK: rlx.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
// CHECK: rlx.cast %{{.*}} : (tensor<4xf32>) -> tensor<4xi64>
// CHECK: rlx.stop_gradient
func.func @select(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi64>) {
  %z = rlx.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %p = rlx.compare %x, %y {predicate = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %w = rlx.where %p, %x, %z : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %i = rlx.cast %w : (tensor<4xf32>) -> tensor<4xi64>
  %s = rlx.stop_gradient %w : (tensor<4xf32>) -> tensor<4xf32>
  func.return %s, %i : tensor<4xf32>, tensor<4xi64>
}
