// f16 and bf16 are storage types: rlx.cast rounds to nearest even (f32 -> bf16 on the
// bits, so subnormals survive: the x86 instruction flushes them; 1.00048828125 is a tie
// that goes to the even 1.0), compute is f32.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-run %s --entry round | FileCheck %s --check-prefix=VAL
// RUN: rlx-run %s --entry round --interpret | FileCheck %s --check-prefix=VAL
// RUN: rlx-opt %s --autodiff=func=loss | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @round
// CHECK: linalg.generic
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.shrui
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK-NOT: rlx.
// VAL: result 0: tensor<4xbf16>
// VAL-NEXT: [1.00781, 1.02344, 9.18355e-41, inf]
// VAL: result 1: tensor<4xf16>
// VAL-NEXT: [ 1.000977,       inf,  1.000000, -2.000000]
// VAL: result 2: tensor<4xf32>
// VAL-NEXT: [2.015625, 2.046875, 0.000000,      inf]
func.func @round() -> (tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>) {
  %x = rlx.constant {value = dense<[1.0078125, 1.0234375, 1.0e-40, 3.4e38]> : tensor<4xf32>} : () -> tensor<4xf32>
  %b = rlx.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
  %y = rlx.constant {value = dense<[1.0009765625, 65520.0, 1.00048828125, -2.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %h = rlx.cast %y : (tensor<4xf32>) -> tensor<4xf16>
  %w = rlx.cast %b : (tensor<4xbf16>) -> tensor<4xf32>
  %s = rlx.add %w, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %b, %h, %s : tensor<4xbf16>, tensor<4xf16>, tensor<4xf32>
}

// The gradient of a bf16 argument is bf16: the cotangent is cast back.
// GRAD-LABEL: func.func @loss_grad
// GRAD-SAME: -> (tensor<f32>, tensor<3xbf16>)
// GRAD: rlx.cast %{{.*}} : (tensor<3xf32>) -> tensor<3xbf16>
func.func @loss(%x: tensor<3xbf16>) -> tensor<f32> {
  %w = rlx.cast %x : (tensor<3xbf16>) -> tensor<3xf32>
  %e = rlx.exp %w : (tensor<3xf32>) -> tensor<3xf32>
  %s = rlx.reduce_sum %e {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
