// RUN: rlx-opt %s | FileCheck %s
// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: rlx-opt %s --print-op-generic | mlir-opt --allow-unregistered-dialect | rlx-opt | FileCheck %s

// Every op of the complex family, c64 and c128 (parts f32 and f64), with a broadcast.
// CHECK-LABEL: func.func @parts
// CHECK: rlx.complex %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xcomplex<f32>>
// CHECK: rlx.real %{{.*}} : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
// CHECK: rlx.imag %{{.*}} : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
// CHECK: rlx.conjugate %{{.*}} : (tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>>
// CHECK: rlx.complex_norm_sq %{{.*}} : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
// CHECK: rlx.complex_norm_sq_backward %{{.*}}, %{{.*}} : (tensor<4xcomplex<f64>>, tensor<4xf64>) -> tensor<4xcomplex<f64>>
// CHECK: rlx.constant {value = dense<(1.000000e+00,-2.000000e+00)> : tensor<complex<f32>>}
// GENERIC: "rlx.complex"(%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xcomplex<f32>>
// GENERIC: "rlx.complex_norm_sq_backward"(%{{.*}}, %{{.*}}) : (tensor<4xcomplex<f64>>, tensor<4xf64>) -> tensor<4xcomplex<f64>>
func.func @parts(%re: tensor<2x3xf32>, %im: tensor<3xf32>, %z: tensor<4xcomplex<f64>>, %g: tensor<4xf64>)
    -> (tensor<2x3xf32>, tensor<4xf64>, tensor<4xcomplex<f64>>, tensor<4xf64>, tensor<4xcomplex<f64>>, tensor<complex<f32>>) {
  %c = rlx.complex %re, %im : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xcomplex<f32>>
  %r = rlx.real %c : (tensor<2x3xcomplex<f32>>) -> tensor<2x3xf32>
  %i = rlx.imag %z : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
  %j = rlx.conjugate %z : (tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>>
  %n = rlx.complex_norm_sq %z : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
  %d = rlx.complex_norm_sq_backward %z, %g : (tensor<4xcomplex<f64>>, tensor<4xf64>) -> tensor<4xcomplex<f64>>
  %k = rlx.constant {value = dense<(1.0,-2.0)> : tensor<complex<f32>>} : () -> tensor<complex<f32>>
  func.return %r, %i, %j, %n, %d, %k : tensor<2x3xf32>, tensor<4xf64>, tensor<4xcomplex<f64>>, tensor<4xf64>, tensor<4xcomplex<f64>>, tensor<complex<f32>>
}
