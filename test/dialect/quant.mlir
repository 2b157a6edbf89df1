// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @ops
// CHECK: rlx.quantize %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xi32>) -> tensor<4x3xi8>
// CHECK: rlx.dequantize %{{.*}}, %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<4x3xi8>, tensor<3xf32>, tensor<3xi32>) -> tensor<4x3xf32>
// CHECK: rlx.fake_quantize %{{.*}} {bits = 4 : i64, ste = "tanh"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: rlx.fake_quantize_lsq %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
// CHECK: rlx.fake_quantize_backward %{{.*}}, %{{.*}} {ste = "hard_tanh"}
// CHECK: rlx.fake_quantize_lsq_backward_scale %{{.*}} -> tensor<f32>
func.func @ops(%x: tensor<4x3xf32>, %s: tensor<3xf32>, %zp: tensor<3xi32>, %step: tensor<f32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>) {
  %q = rlx.quantize %x, %s, %zp {axis = 1 : i64} : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xi32>) -> tensor<4x3xi8>
  %d = rlx.dequantize %q, %s, %zp {axis = 1 : i64} : (tensor<4x3xi8>, tensor<3xf32>, tensor<3xi32>) -> tensor<4x3xf32>
  %f = rlx.fake_quantize %x {bits = 4 : i64, ste = "tanh"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %l = rlx.fake_quantize_lsq %x, %step : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %b = rlx.fake_quantize_backward %x, %x {ste = "hard_tanh"} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %g = rlx.fake_quantize_lsq_backward_scale %x, %step, %x : (tensor<4x3xf32>, tensor<f32>, tensor<4x3xf32>) -> tensor<f32>
  func.return %d, %f, %l, %b, %g : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<f32>
}
