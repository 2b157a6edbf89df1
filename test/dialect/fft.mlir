// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// CHECK-LABEL: func.func @both
// CHECK: rlx.fft %{{.*}} : (tensor<2x8xcomplex<f32>>) -> tensor<2x8xcomplex<f32>>
// CHECK: rlx.fft %{{.*}} {inverse = true, norm = "ortho"} : (tensor<2x8xcomplex<f64>>) -> tensor<2x8xcomplex<f64>>
func.func @both(%x: tensor<2x8xcomplex<f32>>, %z: tensor<2x8xcomplex<f64>>) -> (tensor<2x8xcomplex<f32>>, tensor<2x8xcomplex<f64>>) {
  %0 = rlx.fft %x : (tensor<2x8xcomplex<f32>>) -> tensor<2x8xcomplex<f32>>
  %1 = rlx.fft %z {inverse = true, norm = "ortho"} : (tensor<2x8xcomplex<f64>>) -> tensor<2x8xcomplex<f64>>
  func.return %0, %1 : tensor<2x8xcomplex<f32>>, tensor<2x8xcomplex<f64>>
}
