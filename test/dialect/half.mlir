// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// f16 and bf16 tensors round-trip through rlx.cast and rlx.constant.

// CHECK-LABEL: func.func @storage
// CHECK: rlx.constant {value = dense<[1.000000e+00, 2.500000e+00]> : tensor<2xbf16>}
// CHECK: rlx.cast %{{.*}} : (tensor<2xbf16>) -> tensor<2xf16>
// CHECK: rlx.cast %{{.*}} : (tensor<2xf16>) -> tensor<2xf32>
func.func @storage() -> tensor<2xf32> {
  %c = rlx.constant {value = dense<[1.0, 2.5]> : tensor<2xbf16>} : () -> tensor<2xbf16>
  %h = rlx.cast %c : (tensor<2xbf16>) -> tensor<2xf16>
  %f = rlx.cast %h : (tensor<2xf16>) -> tensor<2xf32>
  func.return %f : tensor<2xf32>
}
