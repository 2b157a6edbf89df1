// rlx.fft: a radix-2 Stockham FFT for power-of-two lengths (one parallel generic per
// stage on real and imaginary planes), the direct sum up to 16, Bluestein above; native
// code and the interpreter print numpy's values.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-run %s --entry transforms | FileCheck %s --check-prefix=VAL
// RUN: rlx-run %s --entry transforms --interpret | FileCheck %s --check-prefix=VAL
// RUN: rlx-opt %s --autodiff=func=power | FileCheck %s --check-prefix=GRAD

// Four points: split into real and imaginary planes, two stages that read the two
// halves through affine maps (so they vectorize), joined again.
// CHECK-LABEL: func.func @transforms
// CHECK: complex.re
// CHECK: complex.im
// CHECK: tensor.extract_slice
// CHECK: tensor.expand_shape
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK: arith.mulf
// CHECK: tensor.collapse_shape
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK: complex.create
// Three points: one generic that reduces over n.
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK-NOT: rlx.fft
// VAL: result 0: tensor<4xcomplex<f32>>
// VAL-NEXT: [10.000000+0.000000j, -2.000000+2.000000j, -2.000000+0.000000j, -2.000000-2.000000j]
// VAL: result 1: tensor<3xcomplex<f32>>
// VAL-NEXT: [1.000000+0.000000j, 1.000000+0.000000j, 1.000000+0.000000j]
func.func @transforms() -> (tensor<4xcomplex<f32>>, tensor<3xcomplex<f32>>) {
  %x = rlx.constant {value = dense<[(1.0, 0.0), (2.0, 0.0), (3.0, 0.0), (4.0, 0.0)]> : tensor<4xcomplex<f32>>} : () -> tensor<4xcomplex<f32>>
  %y = rlx.fft %x : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  %d = rlx.constant {value = dense<[(3.0, 0.0), (0.0, 0.0), (0.0, 0.0)]> : tensor<3xcomplex<f32>>} : () -> tensor<3xcomplex<f32>>
  %e = rlx.fft %d {inverse = true} : (tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
  func.return %y, %e : tensor<4xcomplex<f32>>, tensor<3xcomplex<f32>>
}

// The VJP of a transform is the adjoint: the other direction, with the dual norm.
// GRAD-LABEL: func.func @power_grad
// GRAD: rlx.fft %{{.*}} {inverse = true, norm = "forward"}
func.func @power(%x: tensor<8xcomplex<f32>>) -> tensor<f32> {
  %y = rlx.fft %x {norm = "backward"} : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
  %p = rlx.complex_norm_sq %y : (tensor<8xcomplex<f32>>) -> tensor<8xf32>
  %s = rlx.reduce_sum %p {axes = array<i64: 0>} : (tensor<8xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
