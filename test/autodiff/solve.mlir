// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS

// VJP of the solves (SPEC 5.5, implicit function rule): dB = solve(A^T, g), dA = -dB X^T.

// grad_of_dense_solve_emits_implicit_function_rule: A [2, 2], b [2], loss = sum(solve(A, b)).
// Three results (loss, dA, db); the mirror and the reverse pass each hold a dense_solve.
// GRADS: check-grads @implicit: OK
// CHECK-LABEL: func.func @implicit_grad(
// CHECK-SAME: -> (tensor<f32>, tensor<2x2xf32>, tensor<2xf32>)
// CHECK: %[[X:.*]] = rlx.dense_solve %A, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: %[[AT:.*]] = rlx.transpose %A {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK: %[[DB:.*]] = rlx.dense_solve %[[AT]], %{{.*}} : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK: %[[COL:.*]] = rlx.reshape %[[DB]] : (tensor<2xf32>) -> tensor<2x1xf32>
// CHECK: %[[ROW:.*]] = rlx.reshape %[[X]] : (tensor<2xf32>) -> tensor<1x2xf32>
// CHECK: %[[OUTER:.*]] = rlx.matmul %[[COL]], %[[ROW]] : (tensor<2x1xf32>, tensor<1x2xf32>) -> tensor<2x2xf32>
// CHECK: %[[DA:.*]] = rlx.neg %[[OUTER]] : (tensor<2x2xf32>) -> tensor<2x2xf32>
// CHECK: func.return %{{.*}}, %[[DA]], %[[DB]] : tensor<f32>, tensor<2x2xf32>, tensor<2xf32>
func.func @implicit(%A: tensor<2x2xf32> {rlx.name = "A", rlx.param}, %b: tensor<2xf32> {rlx.name = "b", rlx.param}) -> tensor<f32> {
  %x = rlx.dense_solve %A, %b : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %l = rlx.reduce_sum %x {axes = array<i64: 0>} : (tensor<2xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}

// Several right-hand sides: X^T is a transpose, no reshapes.
// GRADS: check-grads @multi_rhs: OK
// CHECK-LABEL: func.func @multi_rhs_grad(
// CHECK: %[[X:.*]] = rlx.dense_solve %A, %B : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK: %[[AT:.*]] = rlx.transpose %A {perm = array<i64: 1, 0>}
// CHECK: %[[DB:.*]] = rlx.dense_solve %[[AT]], %d_output : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
// CHECK: %[[XT:.*]] = rlx.transpose %[[X]] {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
// CHECK: %[[P:.*]] = rlx.matmul %[[DB]], %[[XT]] : (tensor<3x2xf32>, tensor<2x3xf32>) -> tensor<3x3xf32>
// CHECK: %[[DA:.*]] = rlx.neg %[[P]]
// CHECK: func.return %[[X]], %[[DA]], %[[DB]]
func.func @multi_rhs(%A: tensor<3x3xf32> {rlx.name = "A", rlx.param}, %B: tensor<3x2xf32> {rlx.name = "B", rlx.param}) -> tensor<3x2xf32> {
  %x = rlx.dense_solve %A, %B : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %x : tensor<3x2xf32>
}

// Batched: A^T swaps the last two dims (perm [0, 2, 1]); rank-2 b uses [B, N, 1] x [B, 1, N].
// GRADS: check-grads @batched_vec: OK
// CHECK-LABEL: func.func @batched_vec_grad(
// CHECK: %[[X:.*]] = rlx.batched_dense_solve %A, %b
// CHECK: %[[AT:.*]] = rlx.transpose %A {perm = array<i64: 0, 2, 1>} : (tensor<2x3x3xf32>) -> tensor<2x3x3xf32>
// CHECK: %[[DB:.*]] = rlx.batched_dense_solve %[[AT]], %d_output : (tensor<2x3x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: rlx.reshape %[[DB]] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK: rlx.reshape %[[X]] : (tensor<2x3xf32>) -> tensor<2x1x3xf32>
// CHECK: rlx.matmul %{{.*}}, %{{.*}} : (tensor<2x3x1xf32>, tensor<2x1x3xf32>) -> tensor<2x3x3xf32>
// CHECK: rlx.neg
func.func @batched_vec(%A: tensor<2x3x3xf32> {rlx.name = "A", rlx.param}, %b: tensor<2x3xf32> {rlx.name = "b", rlx.param}) -> tensor<2x3xf32> {
  %x = rlx.batched_dense_solve %A, %b : (tensor<2x3x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %x : tensor<2x3xf32>
}

// GRADS: check-grads @batched_multi: OK
// CHECK-LABEL: func.func @batched_multi_grad(
// CHECK: %[[X:.*]] = rlx.batched_dense_solve %A, %B
// CHECK: rlx.transpose %[[X]] {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
// CHECK: rlx.matmul %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<2x4x3xf32>) -> tensor<2x3x3xf32>
func.func @batched_multi(%A: tensor<2x3x3xf32> {rlx.name = "A", rlx.param}, %B: tensor<2x3x4xf32> {rlx.name = "B", rlx.param}) -> tensor<2x3x4xf32> {
  %x = rlx.batched_dense_solve %A, %B : (tensor<2x3x3xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %x : tensor<2x3x4xf32>
}

// Complex: dB = solve(A^H, g) and dA = -dB X^H (conjugate transposes, SPEC 5.9), checked
// against finite differences of a real loss |X|^2.
// GRADS: check-grads @complex_solve: OK
// CHECK-LABEL: func.func @complex_solve_grad(
// CHECK: %[[AH:.*]] = rlx.conjugate %A : (tensor<3x3xcomplex<f32>>) -> tensor<3x3xcomplex<f32>>
// CHECK: rlx.transpose %[[AH]] {perm = array<i64: 1, 0>}
// CHECK: rlx.conjugate %{{.*}} : (tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
func.func @complex_solve(%A: tensor<3x3xcomplex<f32>> {rlx.name = "A", rlx.param}, %b: tensor<3xcomplex<f32>> {rlx.name = "b", rlx.param}) -> tensor<f32> {
  %x = rlx.dense_solve %A, %b : (tensor<3x3xcomplex<f32>>, tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>>
  %n = rlx.complex_norm_sq %x : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
  %l = rlx.reduce_sum %n {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %l : tensor<f32>
}
