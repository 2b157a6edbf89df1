// Quantization lowers to elementwise generics (the per-batch scale a max-abs reduction);
// native code and the interpreter print the same levels.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-run %s --entry levels | FileCheck %s --check-prefix=VAL
// RUN: rlx-run %s --entry levels --interpret | FileCheck %s --check-prefix=VAL
// RUN: rlx-opt %s --autodiff=func=qat | FileCheck %s --check-prefix=GRAD

// CHECK-LABEL: func.func @levels
// CHECK: linalg.generic
// CHECK: arith.divf
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: linalg.reduce
// CHECK: arith.maximumf
// CHECK-NOT: rlx.
// VAL: result 0: tensor<5xi8>
// VAL-NEXT: [  13,  -17,  127, -128,    3]
// VAL: result 1: tensor<5xf32>
// VAL-NEXT: [ 0.000000, -0.857143,  2.571429, -6.000000,  0.000000]
// VAL: result 2: tensor<1x2xi8>
// VAL-NEXT: {{\[\[}}  9, -128]]
func.func @levels() -> (tensor<5xi8>, tensor<5xf32>, tensor<1x2xi8>) {
  %x = rlx.constant {value = dense<[0.5, -1.0, 30.0, -30.0, 0.01]> : tensor<5xf32>} : () -> tensor<5xf32>
  %s = rlx.constant {value = dense<0.05> : tensor<f32>} : () -> tensor<f32>
  %zp = rlx.constant {value = dense<3> : tensor<i32>} : () -> tensor<i32>
  %q = rlx.quantize %x, %s, %zp : (tensor<5xf32>, tensor<f32>, tensor<i32>) -> tensor<5xi8>
  %y = rlx.constant {value = dense<[0.4, -1.2, 2.2, -6.0, 0.1]> : tensor<5xf32>} : () -> tensor<5xf32>
  %f = rlx.fake_quantize %y {bits = 4 : i64} : (tensor<5xf32>) -> tensor<5xf32>
  %a = rlx.constant {value = dense<[[1, 2, 3]]> : tensor<1x3xi8>} : () -> tensor<1x3xi8>
  %w = rlx.constant {value = dense<[[1, -100], [2, -100], [3, -100]]> : tensor<3x2xi8>} : () -> tensor<3x2xi8>
  %b = rlx.constant {value = dense<[4, 0]> : tensor<2xi32>} : () -> tensor<2xi32>
  // acc = [4 + 14, -600]; round(acc / 2) + 0 = [9, -300 -> -128]
  %m = rlx.qmatmul %a, %w, %b {mult = 0.5 : f32} : (tensor<1x3xi8>, tensor<3x2xi8>, tensor<2xi32>) -> tensor<1x2xi8>
  func.return %q, %f, %m : tensor<5xi8>, tensor<5xf32>, tensor<1x2xi8>
}

// The clipped straight-through estimate becomes its backward op.
// GRAD-LABEL: func.func @qat_grad
// GRAD: rlx.fake_quantize_backward %{{.*}}, %{{.*}} {bits = 2 : i64, ste = "clipped_identity"}
func.func @qat(%w: tensor<6xf32>) -> tensor<f32> {
  %q = rlx.fake_quantize %w {bits = 2 : i64, ste = "clipped_identity"} : (tensor<6xf32>) -> tensor<6xf32>
  %s = rlx.reduce_sum %q {axes = array<i64: 0>} : (tensor<6xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
