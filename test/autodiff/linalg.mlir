// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS

// VJP rules of the linalg family (SPEC 5.5, 5.6, 3.5) and of gather (via the dedicated
// backward ops), and their finite-difference check in f64.

// GRADS: check-grads @matmul: OK
// GRADS-NEXT: d/da: max relative error
// GRADS-NEXT: d/db: max relative error
// da = g @ b^T, db = a^T @ g.
// CHECK-LABEL: func.func @matmul_grad(
// CHECK: %[[Y:.*]] = rlx.matmul %a, %b
// CHECK: %[[BT:.*]] = rlx.transpose %b {perm = array<i64: 1, 0>} : (tensor<3x5xf32>) -> tensor<5x3xf32>
// CHECK: %[[DA:.*]] = rlx.matmul %d_output, %[[BT]] : (tensor<4x5xf32>, tensor<5x3xf32>) -> tensor<4x3xf32>
// CHECK: %[[AT:.*]] = rlx.transpose %a {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
// CHECK: %[[DB:.*]] = rlx.matmul %[[AT]], %d_output : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
// CHECK: func.return %[[Y]], %[[DA]], %[[DB]]
func.func @matmul(%a: tensor<4x3xf32> {rlx.name = "a", rlx.param}, %b: tensor<3x5xf32> {rlx.name = "b", rlx.param}) -> tensor<4x5xf32> {
  %y = rlx.matmul %a, %b : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  func.return %y : tensor<4x5xf32>
}

// GRADS: check-grads @matmul_batch_broadcast: OK
// Batch broadcast: each partial product is summed back over the dims its operand broadcast
// (a: dim 1 of size 1; b: the missing leading dim).
// CHECK-LABEL: func.func @matmul_batch_broadcast_grad(
// CHECK: %[[GA:.*]] = rlx.matmul %d_output, %{{.*}} : (tensor<2x6x4x5xf32>, tensor<6x5x3xf32>) -> tensor<2x6x4x3xf32>
// CHECK: %[[DA:.*]] = rlx.reduce_sum %[[GA]] {axes = array<i64: 1>, keep_dims = true} : (tensor<2x6x4x3xf32>) -> tensor<2x1x4x3xf32>
// CHECK: %[[GB:.*]] = rlx.matmul %{{.*}}, %d_output : (tensor<2x1x3x4xf32>, tensor<2x6x4x5xf32>) -> tensor<2x6x3x5xf32>
// CHECK: %[[SB:.*]] = rlx.reduce_sum %[[GB]] {axes = array<i64: 0>, keep_dims = true} : (tensor<2x6x3x5xf32>) -> tensor<1x6x3x5xf32>
// CHECK: %[[DB:.*]] = rlx.reshape %[[SB]] : (tensor<1x6x3x5xf32>) -> tensor<6x3x5xf32>
// CHECK: func.return %{{.*}}, %[[DA]], %[[DB]]
func.func @matmul_batch_broadcast(%a: tensor<2x1x4x3xf32> {rlx.name = "a", rlx.param}, %b: tensor<6x3x5xf32> {rlx.name = "b", rlx.param}) -> tensor<2x6x4x5xf32> {
  %y = rlx.matmul %a, %b : (tensor<2x1x4x3xf32>, tensor<6x3x5xf32>) -> tensor<2x6x4x5xf32>
  func.return %y : tensor<2x6x4x5xf32>
}

// GRADS: check-grads @reduce_sum: OK
// sum: g reshaped to the kept-dims shape and expanded back.
// CHECK-LABEL: func.func @reduce_sum_grad(
// CHECK: %[[S:.*]] = rlx.reshape %d_output : (tensor<3xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT: %[[DX:.*]] = rlx.expand %[[S]] : (tensor<1x3x1xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT: func.return %{{.*}}, %[[DX]]
func.func @reduce_sum(%x: tensor<2x3x2xf32> {rlx.name = "x", rlx.param}) -> tensor<3xf32> {
  %0 = rlx.reduce_sum %x {axes = array<i64: 0, 2>} : (tensor<2x3x2xf32>) -> tensor<3xf32>
  func.return %0 : tensor<3xf32>
}

// GRADS: check-grads @reduce_mean: OK
// mean: g scaled by 1/count = 0.25 (a constant of g's dtype), kept dims: expand only.
// CHECK-LABEL: func.func @reduce_mean_grad(
// CHECK: %[[Q:.*]] = rlx.constant {value = dense<2.500000e-01> : tensor<f32>}
// CHECK-NEXT: %[[GM:.*]] = rlx.mul %d_output, %[[Q]] : (tensor<1x3x1xf32>, tensor<f32>) -> tensor<1x3x1xf32>
// CHECK-NEXT: %[[DX:.*]] = rlx.expand %[[GM]] : (tensor<1x3x1xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT: func.return %{{.*}}, %[[DX]]
func.func @reduce_mean(%x: tensor<2x3x2xf32> {rlx.name = "x", rlx.param}) -> tensor<1x3x1xf32> {
  %0 = rlx.reduce_mean %x {axes = array<i64: 0, -1>, keep_dims = true} : (tensor<2x3x2xf32>) -> tensor<1x3x1xf32>
  func.return %0 : tensor<1x3x1xf32>
}

// GRADS: check-grads @reduce_max: OK
// max / min: g split evenly among the elements equal to the (kept-dims) extreme (g over
// their count), 0 elsewhere.
// CHECK-LABEL: func.func @reduce_max_grad(
// CHECK: %[[Y:.*]] = rlx.reduce_max %x
// CHECK-NEXT: %[[YK:.*]] = rlx.reshape %[[Y]] : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT: %[[GK:.*]] = rlx.reshape %d_output : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT: %[[HIT:.*]] = rlx.compare %x, %[[YK]] {predicate = "eq"} : (tensor<2x3x2xf32>, tensor<2x3x1xf32>) -> tensor<2x3x2xi1>
// CHECK-NEXT: %[[Z:.*]] = rlx.constant {value = dense<0.000000e+00> : tensor<f32>}
// CHECK-NEXT: %[[ONE:.*]] = rlx.constant {value = dense<1.000000e+00> : tensor<f32>}
// CHECK-NEXT: %[[HITS:.*]] = rlx.where %[[HIT]], %[[ONE]], %[[Z]]
// CHECK-NEXT: %[[COUNT:.*]] = rlx.reduce_sum %[[HITS]] {axes = array<i64: 2>, keep_dims = true} : (tensor<2x3x2xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT: %[[K:.*]] = rlx.max %[[COUNT]], %[[ONE]]
// CHECK-NEXT: %[[SHARE:.*]] = rlx.div %[[GK]], %[[K]]
// CHECK-NEXT: %[[G:.*]] = rlx.expand %[[SHARE]] : (tensor<2x3x1xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT: %[[DX:.*]] = rlx.where %[[HIT]], %[[G]], %[[Z]]
// CHECK-NEXT: func.return %[[Y]], %[[DX]]
func.func @reduce_max(%x: tensor<2x3x2xf32> {rlx.name = "x", rlx.param}) -> tensor<2x3xf32> {
  %0 = rlx.reduce_max %x {axes = array<i64: -1>} : (tensor<2x3x2xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}

// GRADS: check-grads @reduce_min: OK
// CHECK-LABEL: func.func @reduce_min_grad(
// CHECK: %[[Y:.*]] = rlx.reduce_min %x
// CHECK-NEXT: %[[HIT:.*]] = rlx.compare %x, %[[Y]] {predicate = "eq"} : (tensor<2x3x2xf32>, tensor<1x3x2xf32>) -> tensor<2x3x2xi1>
// CHECK: %[[SHARE:.*]] = rlx.div %d_output, %{{.*}} : (tensor<1x3x2xf32>, tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
// CHECK-NEXT: %[[G:.*]] = rlx.expand %[[SHARE]] : (tensor<1x3x2xf32>) -> tensor<2x3x2xf32>
// CHECK-NEXT: rlx.where %[[HIT]], %[[G]]
func.func @reduce_min(%x: tensor<2x3x2xf32> {rlx.name = "x", rlx.param}) -> tensor<1x3x2xf32> {
  %0 = rlx.reduce_min %x {axes = array<i64: 0>, keep_dims = true} : (tensor<2x3x2xf32>) -> tensor<1x3x2xf32>
  func.return %0 : tensor<1x3x2xf32>
}

// GRADS: check-grads @reduce_prod: OK
// prod: g spread back times the product of the other elements, built from the product of
// the nonzero elements (zeros replaced by 1) so a zero entry gives a finite gradient.
// CHECK-LABEL: func.func @reduce_prod_grad(
// CHECK: %[[Y:.*]] = rlx.reduce_prod %x {axes = array<i64: 1>}
// CHECK: %[[G:.*]] = rlx.expand %{{.*}} : (tensor<2x1x2xf32>) -> tensor<2x3x2xf32>
// CHECK: %[[ZERO:.*]] = rlx.constant {value = dense<0.000000e+00> : tensor<2x3x2xf32>}
// CHECK: %[[ONE:.*]] = rlx.constant {value = dense<1.000000e+00> : tensor<2x3x2xf32>}
// CHECK: %[[ISZERO:.*]] = rlx.compare %x, %[[ZERO]] {predicate = "eq"}
// CHECK-NEXT: %[[NONZERO:.*]] = rlx.where %[[ISZERO]], %[[ONE]], %x
// CHECK-NEXT: rlx.reduce_prod %[[NONZERO]] {axes = array<i64: 1>, keep_dims = true}
// CHECK-NOT: rlx.div %{{.*}}, %x
// CHECK: %[[DX:.*]] = rlx.mul %[[G]], %{{.*}} : (tensor<2x3x2xf32>, tensor<2x3x2xf32>)
// CHECK-NEXT: func.return %[[Y]], %[[DX]]
func.func @reduce_prod(%x: tensor<2x3x2xf32> {rlx.name = "x", rlx.param}) -> tensor<2x2xf32> {
  %0 = rlx.reduce_prod %x {axes = array<i64: 1>} : (tensor<2x3x2xf32>) -> tensor<2x2xf32>
  func.return %0 : tensor<2x2xf32>
}

// GRADS: check-grads @cumsum_exclusive: OK
// cumsum: the dedicated reverse running sum (SPEC 3.5), same axis and exclusivity.
// CHECK-LABEL: func.func @cumsum_exclusive_grad(
// CHECK: %[[Y:.*]] = rlx.cumsum %x {axis = 0 : i64, exclusive = true}
// CHECK-NEXT: %[[DX:.*]] = rlx.cumsum_backward %d_output {axis = 0 : i64, exclusive = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: func.return %[[Y]], %[[DX]]
func.func @cumsum_exclusive(%x: tensor<4x3xf32> {rlx.name = "x", rlx.param}) -> tensor<4x3xf32> {
  %y = rlx.cumsum %x {axis = 0 : i64, exclusive = true} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %y : tensor<4x3xf32>
}

// GRADS: check-grads @cumsum_last: OK
// CHECK-LABEL: func.func @cumsum_last_grad(
// CHECK: rlx.cumsum_backward %d_output {axis = 1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NOT: rlx.reduce_sum
// CHECK: func.return
func.func @cumsum_last(%x: tensor<4x3xf32> {rlx.name = "x", rlx.param}) -> tensor<4x3xf32> {
  %z = rlx.cumsum %x {axis = -1 : i64} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  func.return %z : tensor<4x3xf32>
}

// GRADS: check-grads @embedding: OK
// GRADS-NEXT: d/dw: max relative error
// gather: the dedicated clamped scatter-add into the caller-given table shape.
// CHECK-LABEL: func.func @embedding_grad(
// CHECK: %[[E:.*]] = rlx.gather %w, %ids
// CHECK-NEXT: %[[DW:.*]] = rlx.gather_backward %d_output, %ids {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3xi64>) -> tensor<5x4xf32>
// CHECK-NEXT: func.return %[[E]], %[[DW]]
func.func @embedding(%w: tensor<5x4xf32> {rlx.name = "w", rlx.param}, %ids: tensor<2x3xi64> {rlx.name = "ids"}) -> tensor<2x3x4xf32> {
  %e = rlx.gather %w, %ids : (tensor<5x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  func.return %e : tensor<2x3x4xf32>
}

// GRADS: check-grads @gather_axis1: OK
// CHECK-LABEL: func.func @gather_axis1_grad(
// CHECK: rlx.gather_backward %d_output, %ids {axis = 1 : i64} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x2xf32>
func.func @gather_axis1(%t: tensor<3x2xf32> {rlx.name = "t", rlx.param}, %ids: tensor<4xf32> {rlx.name = "ids"}) -> tensor<3x4xf32> {
  %e = rlx.gather %t, %ids {axis = -1 : i64} : (tensor<3x2xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  func.return %e : tensor<3x4xf32>
}
// GRADS-NOT: FAILED
