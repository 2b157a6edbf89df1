// The autodiff, JVP and vmap passes on a custom_fn whose vjp region has the constant 2.0
// that @f also has: the passes' CSE merges the two, which used to leave regions using a
// value of another function (verifier: "Operation using value defined out of its
// IsolatedFromAbove parent") or crash vmap (KeyError). Each output must verify and
// round-trip, with the region's constant re-created inside it (regions stay closed), and
// the gradients must pass --check-grads. The --cse runs start from @f with the vjp
// region capturing @f's constant (a legal capture: custom_fn is not IsolatedFromAbove).
//
// RUN: rlx-opt %s --autodiff --autodiff=func=f_grad | rlx-opt | FileCheck %s --check-prefix=GRAD2
// RUN: rlx-opt %s --cse --autodiff --autodiff=func=f_grad | rlx-opt | FileCheck %s --check-prefix=GRAD2
// RUN: rlx-opt %s --autodiff --autodiff=func=f_grad --check-grads | FileCheck %s --check-prefix=GRAD2-OK
// RUN: rlx-opt %s --cse --autodiff --autodiff=func=f_grad --check-grads | FileCheck %s --check-prefix=GRAD2-OK
// RUN: rlx-opt %s --jvp --autodiff=func=f_jvp | rlx-opt | FileCheck %s --check-prefix=JVPGRAD
// RUN: rlx-opt %s --cse --jvp --autodiff=func=f_jvp | rlx-opt | FileCheck %s --check-prefix=JVPGRAD
// RUN: rlx-opt %s --jvp --autodiff=func=f_jvp --check-grads | FileCheck %s --check-prefix=JVPGRAD-OK
// RUN: rlx-opt %s "--vmap=func=f batched=x size=2" --autodiff | rlx-opt | FileCheck %s --check-prefix=VMAPGRAD
// RUN: rlx-opt %s --cse "--vmap=func=f batched=x size=2" --autodiff | rlx-opt | FileCheck %s --check-prefix=VMAPGRAD
// RUN: rlx-opt %s "--vmap=func=f batched=x size=2" --autodiff --check-grads | FileCheck %s --check-prefix=VMAPGRAD-OK
// RUN: rlx-opt %s --autodiff "--vmap=func=f_grad batched=x size=2" | rlx-opt | FileCheck %s --check-prefix=GRADVMAP
// RUN: rlx-opt %s --cse --autodiff "--vmap=func=f_grad batched=x size=2" | rlx-opt | FileCheck %s --check-prefix=GRADVMAP

// GRAD2-LABEL: func.func @f_grad_grad(
// GRAD2: rlx.custom_fn
// GRAD2: ^bb{{[0-9]+}}(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}):
// GRAD2-NEXT: %[[K:[^ ]+]] = rlx.constant {value = dense<2.000000e+00> : tensor<f32>}
// GRAD2: rlx.mul %{{[^,]*}}, %[[K]] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// GRAD2-NEXT: rlx.yield
// GRAD2: func.return

// GRAD2-OK: check-grads @f: OK (checked @f_grad)
// GRAD2-OK: check-grads @f_grad: OK (checked @f_grad_grad)

// JVPGRAD-LABEL: func.func @f_jvp_grad(
// JVPGRAD: rlx.custom_fn
// JVPGRAD: ^bb{{[0-9]+}}(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}):
// JVPGRAD-NEXT: %[[K:[^ ]+]] = rlx.constant {value = dense<2.000000e+00> : tensor<f32>}
// JVPGRAD: rlx.mul %{{[^,]*}}, %[[K]] : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// JVPGRAD-NEXT: rlx.yield

// JVPGRAD-OK: check-grads @f_jvp: OK (checked @f_jvp_grad)

// VMAPGRAD-LABEL: func.func @f_vmap_grad(
// VMAPGRAD: rlx.custom_fn %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// VMAPGRAD: ^bb{{[0-9]+}}(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}):
// VMAPGRAD-NEXT: %[[K:[^ ]+]] = rlx.constant {value = dense<2.000000e+00> : tensor<f32>}
// VMAPGRAD: rlx.mul %{{[^,]*}}, %[[K]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// VMAPGRAD-NEXT: rlx.yield

// VMAPGRAD-OK: check-grads @f: OK (checked @f_grad)
// VMAPGRAD-OK: check-grads @f_vmap: OK (checked @f_vmap_grad)

// GRADVMAP-LABEL: func.func @f_grad_vmap(
// GRADVMAP: rlx.custom_fn %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GRADVMAP: ^bb{{[0-9]+}}(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}):
// GRADVMAP-NEXT: %[[K:[^ ]+]] = rlx.constant {value = dense<2.000000e+00> : tensor<f32>}
// GRADVMAP: rlx.mul %{{[^,]*}}, %[[K]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// GRADVMAP-NEXT: rlx.yield
// GRADVMAP: func.return %{{.*}} : tensor<2xf32>, tensor<2x3xf32>

func.func @f(%x: tensor<3xf32> {rlx.name = "x", rlx.param}) -> tensor<f32> {
  %c = rlx.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
  %x2 = rlx.mul %x, %c : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %y = rlx.custom_fn %x2 {has_vjp = true} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %s = rlx.mul %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %s : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %yy: tensor<3xf32>, %g: tensor<3xf32>):
    %t = rlx.mul %g, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %k = rlx.constant {value = dense<2.000000e+00> : tensor<f32>} : () -> tensor<f32>
    %u = rlx.mul %t, %k : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    rlx.yield %u : (tensor<3xf32>) -> ()
  })
  %r = rlx.reduce_sum %y {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %r : tensor<f32>
}
