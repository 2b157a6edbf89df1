// --cse merges the constants in the regions of rlx.if and rlx.while with identical ones
// above them (legal: these ops are not IsolatedFromAbove); --autodiff, --jvp and --vmap
// then used to stop on "Operation using value defined out of its IsolatedFromAbove
// parent" or an internal KeyError. Each output must verify and round-trip; values:
// test/python/test_region_captures.py.
//
// RUN: rlx-opt %s --cse --autodiff | rlx-opt | FileCheck %s --check-prefix=GRAD
// RUN: rlx-opt %s --cse --jvp | rlx-opt | FileCheck %s --check-prefix=JVP
// RUN: rlx-opt %s --cse "--vmap=func=cond batched=a0 size=2" "--vmap=func=loop batched=a0 size=2" | rlx-opt | FileCheck %s --check-prefix=VMAP

// GRAD-LABEL: func.func @cond_grad(
// GRAD: %[[H:[^ ]+]] = rlx.constant {value = dense<5.000000e-01> : tensor<f32>}
// GRAD: %[[T:[^ ]+]] = rlx.tanh
// GRAD-NEXT: rlx.mul %[[T]], %[[H]]
// GRAD: func.return
// JVP-LABEL: func.func @cond_jvp(
// JVP: %[[H:[^ ]+]] = rlx.constant {value = dense<5.000000e-01> : tensor<f32>}
// JVP: rlx.tanh
// JVP-NEXT: rlx.activation_backward
// JVP-NEXT: rlx.mul %{{[^,]*}}, %[[H]]
// JVP-NEXT: rlx.mul %{{[^,]*}}, %[[H]]
// VMAP-LABEL: func.func @cond_vmap(
// VMAP: %[[H:[^ ]+]] = rlx.constant {value = dense<5.000000e-01> : tensor<f32>}
// VMAP: rlx.tanh
// VMAP-NEXT: rlx.mul %{{[^,]*}}, %[[H]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
func.func @cond(%0: tensor<3xf32> {rlx.name = "a0", rlx.param}) -> tensor<f32> {
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  %2 = rlx.constant {value = dense<0.000000e+00> : tensor<f32>} : () -> tensor<f32>
  %3 = rlx.compare %1, %2 {predicate = "gt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %4 = rlx.reshape %3 : (tensor<i1>) -> tensor<1xi1>
  %5 = rlx.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
  %6 = rlx.mul %0, %5 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %7 = rlx.if %4, %6 : (tensor<1xi1>, tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%8: tensor<3xf32>):
    %9 = rlx.tanh %8 : (tensor<3xf32>) -> tensor<3xf32>
    %10 = rlx.constant {value = dense<5.000000e-01> : tensor<f32>} : () -> tensor<f32>
    %11 = rlx.mul %9, %10 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    rlx.yield %11 : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%12: tensor<3xf32>):
    %13 = rlx.mul %12, %12 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %13 : (tensor<3xf32>) -> ()
  })
  %14 = rlx.mul %7, %0 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %15 = rlx.reduce_sum %14 {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %15 : tensor<f32>
}

// GRAD-LABEL: func.func @loop_grad(
// GRAD: %[[K:[^ ]+]] = rlx.constant {value = dense<1.500000e+00> : tensor<f32>}
// GRAD: rlx.mul %{{[^,]*}}, %[[K]]
// GRAD: func.return
// JVP-LABEL: func.func @loop_jvp(
// JVP: %[[K:[^ ]+]] = rlx.constant {value = dense<1.500000e+00> : tensor<f32>}
// JVP: rlx.mul %tangent_a0, %[[K]]
// VMAP-LABEL: func.func @loop_vmap(
// VMAP: %[[K:[^ ]+]] = rlx.constant {value = dense<1.500000e+00> : tensor<f32>}
// VMAP: rlx.mul %{{[^,]*}}, %[[K]] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// VMAP: func.return %{{.*}} : tensor<2xf32>
func.func @loop(%0: tensor<3xf32> {rlx.name = "a0", rlx.param}) -> tensor<f32> {
  %1 = rlx.constant {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
  %2 = rlx.mul %0, %1 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %3 = rlx.while %2 {max_iterations = 6 : i64} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%4: tensor<3xf32>):
    %5 = rlx.reduce_sum %4 {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
    %6 = rlx.constant {value = dense<1.000000e+01> : tensor<f32>} : () -> tensor<f32>
    %7 = rlx.compare %5, %6 {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %8 = rlx.reshape %7 : (tensor<i1>) -> tensor<1xi1>
    rlx.yield %8 : (tensor<1xi1>) -> ()
  }, {
  ^bb0(%9: tensor<3xf32>):
    %10 = rlx.constant {value = dense<1.500000e+00> : tensor<f32>} : () -> tensor<f32>
    %11 = rlx.mul %9, %10 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %12 = rlx.constant {value = dense<1.000000e-01> : tensor<f32>} : () -> tensor<f32>
    %13 = rlx.add %11, %12 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    rlx.yield %13 : (tensor<3xf32>) -> ()
  })
  %14 = rlx.mul %3, %3 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %15 = rlx.reduce_sum %14 {axes = array<i64: 0>, keep_dims = false} : (tensor<3xf32>) -> tensor<f32>
  func.return %15 : tensor<f32>
}
