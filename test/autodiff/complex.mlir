// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS
// RUN: rlx-opt %s --jvp --check-grads | FileCheck %s --check-prefix=GRADS

// Complex gradients are Wirtinger derivatives dL/d conj(z) (SPEC 5.9): |z|^2 sends back
// g z; a product sends g times the conjugate of the other factor; Re z sends back g / 2
// as a complex number; a real x inside rlx.complex gets 2 Re of its cotangent.
// GRADS: check-grads @loss: OK
// GRADS-NEXT: d/dz: max relative error {{.*}} over 8 checks: ok
// GRADS-NEXT: d/dw: max relative error {{.*}} over 8 checks: ok
// GRADS-NEXT: d/dx: max relative error {{.*}} over 4 checks: ok
// GRADS-NOT: FAILED

// CHECK-LABEL: func.func @loss_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>, tensor<4xf32>)
// CHECK-DAG: rlx.complex_norm_sq_backward %e, %{{.*}} : (tensor<4xcomplex<f32>>, tensor<4xf32>) -> tensor<4xcomplex<f32>>
// CHECK-DAG: %[[CW:.*]] = rlx.conjugate %w
// CHECK-DAG: rlx.mul %{{.*}}, %[[CW]]
// CHECK-DAG: %[[CZ:.*]] = rlx.conjugate %z
// CHECK-DAG: rlx.mul %{{.*}}, %[[CZ]]
// CHECK-DAG: %[[RC:[0-9]+]] = rlx.real %{{.*}} : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
// CHECK-DAG: rlx.add %[[RC]], %[[RC]]
// CHECK: func.return
func.func @loss(%z: tensor<4xcomplex<f32>> {rlx.name = "z", rlx.param},
                %w: tensor<4xcomplex<f32>> {rlx.name = "w", rlx.param},
                %x: tensor<4xf32> {rlx.name = "x", rlx.param}) -> tensor<f32> {
  %p = rlx.mul %z, %w : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  %c = rlx.complex %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f32>>
  %s = rlx.add %p, %c : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  %e = rlx.exp %s : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  %n = rlx.complex_norm_sq %e : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %r = rlx.real %e : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %t = rlx.add %n, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = rlx.reduce_sum %t {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
