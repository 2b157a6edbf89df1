// RUN: rlx-opt %s --autodiff | FileCheck %s
// RUN: rlx-opt %s --autodiff | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --autodiff --check-grads | FileCheck %s --check-prefix=GRADS

// VJP rules of the nn family (SPEC 5.4, 5.6, 5.8) and their finite-difference check in f64.

// softmax: y * (g - sum_axis(y * g)), composed from primitives on the normalised axis.
// GRADS: check-grads @softmax_last: OK
// CHECK-LABEL: func.func @softmax_last_grad(
// CHECK: %[[Y:.*]] = rlx.softmax %x
// CHECK: %[[YG:.*]] = rlx.mul %[[Y]], %d_output : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: %[[DOT:.*]] = rlx.reduce_sum %[[YG]] {axes = array<i64: 1>, keep_dims = true} : (tensor<3x4xf32>) -> tensor<3x1xf32>
// CHECK: %[[D:.*]] = rlx.sub %d_output, %[[DOT]] : (tensor<3x4xf32>, tensor<3x1xf32>) -> tensor<3x4xf32>
// CHECK: %[[DX:.*]] = rlx.mul %[[Y]], %[[D]] : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: func.return %[[Y]], %[[DX]]
func.func @softmax_last(%x: tensor<3x4xf32> {rlx.name = "x", rlx.param}) -> tensor<3x4xf32> {
  %y = rlx.softmax %x : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// GRADS: check-grads @softmax_axis0: OK
// CHECK-LABEL: func.func @softmax_axis0_grad(
// CHECK: %[[Y:.*]] = rlx.softmax %x {axis = -2 : i64}
// CHECK: %[[YG:.*]] = rlx.mul %[[Y]], %d_output
// CHECK: rlx.reduce_sum %[[YG]] {axes = array<i64: 0>, keep_dims = true} : (tensor<3x4xf32>) -> tensor<1x4xf32>
func.func @softmax_axis0(%x: tensor<3x4xf32> {rlx.name = "x", rlx.param}) -> tensor<3x4xf32> {
  %y = rlx.softmax %x {axis = -2 : i64} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  func.return %y : tensor<3x4xf32>
}

// log_softmax: g - exp(y) * sum_axis(g).
// GRADS: check-grads @log_softmax_mid: OK
// CHECK-LABEL: func.func @log_softmax_mid_grad(
// CHECK: %[[Y:.*]] = rlx.log_softmax %x {axis = 1 : i64}
// CHECK: %[[S:.*]] = rlx.reduce_sum %d_output {axes = array<i64: 1>, keep_dims = true} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK: %[[P:.*]] = rlx.exp %[[Y]]
// CHECK: %[[PS:.*]] = rlx.mul %[[P]], %[[S]] : (tensor<2x3x4xf32>, tensor<2x1x4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[DX:.*]] = rlx.sub %d_output, %[[PS]]
// CHECK: func.return %[[Y]], %[[DX]]
func.func @log_softmax_mid(%x: tensor<2x3x4xf32> {rlx.name = "x", rlx.param}) -> tensor<2x3x4xf32> {
  %y = rlx.log_softmax %x {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return %y : tensor<2x3x4xf32>
}

// layer_norm: x and gamma through the backward ops (attributes forwarded), beta = g summed over rows.
// GRADS: check-grads @layer_norm: OK
// GRADS-NEXT: d/dx
// GRADS-NEXT: d/dg
// GRADS-NEXT: d/db
// CHECK-LABEL: func.func @layer_norm_grad(
// CHECK: %[[Y:.*]] = rlx.layer_norm %x, %g, %b
// CHECK: %[[DX:.*]] = rlx.layer_norm_backward_input %x, %g, %d_output {eps = 1.000000e-03 : f32} : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
// CHECK: %[[DG:.*]] = rlx.layer_norm_backward_gamma %x, %d_output {eps = 1.000000e-03 : f32} : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<5xf32>
// CHECK: %[[SB:.*]] = rlx.reduce_sum %d_output {axes = array<i64: 0, 1>, keep_dims = true} : (tensor<2x3x5xf32>) -> tensor<1x1x5xf32>
// CHECK: %[[DB:.*]] = rlx.reshape %[[SB]] : (tensor<1x1x5xf32>) -> tensor<5xf32>
// CHECK: func.return %[[Y]], %[[DX]], %[[DG]], %[[DB]]
func.func @layer_norm(%x: tensor<2x3x5xf32> {rlx.name = "x", rlx.param}, %g: tensor<5xf32> {rlx.name = "g", rlx.param},
                      %b: tensor<5xf32> {rlx.name = "b", rlx.param}) -> tensor<2x3x5xf32> {
  %y = rlx.layer_norm %x, %g, %b {eps = 1.0e-03 : f32} : (tensor<2x3x5xf32>, tensor<5xf32>, tensor<5xf32>) -> tensor<2x3x5xf32>
  func.return %y : tensor<2x3x5xf32>
}

// rms_norm without beta: two gradients, beta's rule is not used.
// GRADS: check-grads @rms_norm: OK
// CHECK-LABEL: func.func @rms_norm_grad(
// CHECK: %[[Y:.*]] = rlx.rms_norm %x, %g
// CHECK: %[[DX:.*]] = rlx.rms_norm_backward_input %x, %g, %d_output : (tensor<4x6xf32>, tensor<6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
// CHECK: %[[DG:.*]] = rlx.rms_norm_backward_gamma %x, %d_output : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<6xf32>
// CHECK: func.return %[[Y]], %[[DX]], %[[DG]] : tensor<4x6xf32>, tensor<4x6xf32>, tensor<6xf32>
func.func @rms_norm(%x: tensor<4x6xf32> {rlx.name = "x", rlx.param}, %g: tensor<6xf32> {rlx.name = "g", rlx.param}) -> tensor<4x6xf32> {
  %y = rlx.rms_norm %x, %g : (tensor<4x6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}

// rms_norm with beta: beta = g summed over rows.
// GRADS: check-grads @rms_norm_beta: OK
// GRADS-NEXT: d/dx
// GRADS-NEXT: d/dg
// GRADS-NEXT: d/db
// CHECK-LABEL: func.func @rms_norm_beta_grad(
// CHECK: rlx.rms_norm_backward_input %x, %g, %d_output {axis = -1 : i64, eps = 1.000000e-02 : f32}
// CHECK: rlx.rms_norm_backward_gamma %x, %d_output {axis = -1 : i64, eps = 1.000000e-02 : f32}
// CHECK: rlx.reduce_sum %d_output {axes = array<i64: 0>, keep_dims = true} : (tensor<4x6xf32>) -> tensor<1x6xf32>
func.func @rms_norm_beta(%x: tensor<4x6xf32> {rlx.name = "x", rlx.param}, %g: tensor<6xf32> {rlx.name = "g", rlx.param},
                         %b: tensor<6xf32> {rlx.name = "b", rlx.param}) -> tensor<4x6xf32> {
  %y = rlx.rms_norm %x, %g, %b {axis = -1 : i64, eps = 1.0e-02 : f32} : (tensor<4x6xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<4x6xf32>
  func.return %y : tensor<4x6xf32>
}

// group_norm: the three backward ops; beta's reads dy only.
// GRADS: check-grads @group_norm3: OK
// CHECK-LABEL: func.func @group_norm3_grad(
// CHECK: %[[DX:.*]] = rlx.group_norm_backward_input %x, %g, %d_output {num_groups = 2 : i64} : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
// CHECK: %[[DG:.*]] = rlx.group_norm_backward_gamma %x, %d_output {num_groups = 2 : i64} : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<4xf32>
// CHECK: %[[DB:.*]] = rlx.group_norm_backward_beta %d_output : (tensor<2x4x3xf32>) -> tensor<4xf32>
// CHECK: func.return %{{.*}}, %[[DX]], %[[DG]], %[[DB]]
func.func @group_norm3(%x: tensor<2x4x3xf32> {rlx.name = "x", rlx.param}, %g: tensor<4xf32> {rlx.name = "g", rlx.param},
                       %b: tensor<4xf32> {rlx.name = "b", rlx.param}) -> tensor<2x4x3xf32> {
  %y = rlx.group_norm %x, %g, %b {num_groups = 2 : i64} : (tensor<2x4x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x3xf32>
  func.return %y : tensor<2x4x3xf32>
}

// GRADS: check-grads @group_norm4: OK
// CHECK-LABEL: func.func @group_norm4_grad(
// CHECK: rlx.group_norm_backward_input %x, %g, %d_output {num_groups = 3 : i64, eps = 1.000000e-03 : f32} : (tensor<2x6x2x2xf32>, tensor<6xf32>, tensor<2x6x2x2xf32>) -> tensor<2x6x2x2xf32>
// CHECK: rlx.group_norm_backward_gamma %x, %d_output {num_groups = 3 : i64, eps = 1.000000e-03 : f32}
// CHECK: rlx.group_norm_backward_beta %d_output : (tensor<2x6x2x2xf32>) -> tensor<6xf32>
func.func @group_norm4(%x: tensor<2x6x2x2xf32> {rlx.name = "x", rlx.param}, %g: tensor<6xf32> {rlx.name = "g", rlx.param},
                       %b: tensor<6xf32> {rlx.name = "b", rlx.param}) -> tensor<2x6x2x2xf32> {
  %y = rlx.group_norm %x, %g, %b {num_groups = 3 : i64, eps = 1.0e-03 : f32} : (tensor<2x6x2x2xf32>, tensor<6xf32>, tensor<6xf32>) -> tensor<2x6x2x2xf32>
  func.return %y : tensor<2x6x2x2xf32>
}

// batch_norm_inference: x (from gamma, var), gamma, beta; the statistics get nothing
// (they are not parameters here: the variance is exp(lv) to keep it positive).
// GRADS: check-grads @batch_norm: OK
// GRADS-NEXT: d/dx
// GRADS-NEXT: d/dg
// GRADS-NEXT: d/db
// CHECK-LABEL: func.func @batch_norm_grad(
// CHECK: %[[V:.*]] = rlx.exp %lv
// CHECK: %[[DX:.*]] = rlx.batch_norm_inference_backward_input %g, %[[V]], %d_output {eps = 1.000000e-05 : f32} : (tensor<3xf32>, tensor<3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
// CHECK: %[[DG:.*]] = rlx.batch_norm_inference_backward_gamma %x, %m, %[[V]], %d_output {eps = 1.000000e-05 : f32} : (tensor<2x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<2x4x3xf32>) -> tensor<3xf32>
// CHECK: %[[DB:.*]] = rlx.batch_norm_inference_backward_beta %d_output : (tensor<2x4x3xf32>) -> tensor<3xf32>
// CHECK-NOT: rlx.exp
// CHECK: func.return %{{.*}}, %[[DX]], %[[DG]], %[[DB]]
func.func @batch_norm(%x: tensor<2x4x3xf32> {rlx.name = "x", rlx.param}, %g: tensor<3xf32> {rlx.name = "g", rlx.param},
                      %b: tensor<3xf32> {rlx.name = "b", rlx.param}, %m: tensor<3xf32> {rlx.name = "m"},
                      %lv: tensor<3xf32> {rlx.name = "lv"}) -> tensor<2x4x3xf32> {
  %v = rlx.exp %lv : (tensor<3xf32>) -> tensor<3xf32>
  %y = rlx.batch_norm_inference %x, %g, %b, %m, %v {eps = 1.0e-05 : f32} : (tensor<2x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x4x3xf32>
  func.return %y : tensor<2x4x3xf32>
}

// softmax_cross_entropy: logits through the backward op, labels get nothing.
// GRADS: check-grads @cross_entropy: OK
// CHECK-LABEL: func.func @cross_entropy_grad(
// CHECK-SAME: rlx.wrt = ["z"]
// CHECK: %[[L:.*]] = rlx.softmax_cross_entropy %z, %t
// CHECK: %[[DZ:.*]] = rlx.softmax_cross_entropy_backward %z, %t, %d_output : (tensor<4x3xf32>, tensor<4xi32>, tensor<4xf32>) -> tensor<4x3xf32>
// CHECK: func.return %[[L]], %[[DZ]] : tensor<4xf32>, tensor<4x3xf32>
func.func @cross_entropy(%z: tensor<4x3xf32> {rlx.name = "z", rlx.param}, %t: tensor<4xi32> {rlx.name = "t"}) -> tensor<4xf32> {
  %l = rlx.softmax_cross_entropy %z, %t : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<4xf32>
  func.return %l : tensor<4xf32>
}

// A mean loss: d_loss is the broadcast 1/N cotangent.
// GRADS: check-grads @cross_entropy_mean: OK
// CHECK-LABEL: func.func @cross_entropy_mean_grad(
// CHECK: rlx.softmax_cross_entropy_backward %z, %t, %{{.*}} : (tensor<4x5xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<4x5xf32>
func.func @cross_entropy_mean(%z: tensor<4x5xf32> {rlx.name = "z", rlx.param}, %t: tensor<4xi64> {rlx.name = "t"}) -> tensor<f32> {
  %l = rlx.softmax_cross_entropy %z, %t : (tensor<4x5xf32>, tensor<4xi64>) -> tensor<4xf32>
  %m = rlx.reduce_mean %l {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
  func.return %m : tensor<f32>
}

// rope: x through rope_backward (same head_dim, n_rot); cos and sin get nothing.
// GRADS: check-grads @rope: OK
// CHECK-LABEL: func.func @rope_grad(
// CHECK-SAME: rlx.wrt = ["x"]
// CHECK: %[[Y:.*]] = rlx.rope %x, %c, %s
// CHECK: %[[DX:.*]] = rlx.rope_backward %d_output, %c, %s {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<2x3x16xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x16xf32>
// CHECK: func.return %[[Y]], %[[DX]]
func.func @rope(%x: tensor<2x3x16xf32> {rlx.name = "x", rlx.param}, %c: tensor<3x4xf32> {rlx.name = "c"},
                %s: tensor<3x4xf32> {rlx.name = "s"}) -> tensor<2x3x16xf32> {
  %y = rlx.rope %x, %c, %s {head_dim = 8 : i64, n_rot = 4 : i64} : (tensor<2x3x16xf32>, tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<2x3x16xf32>
  func.return %y : tensor<2x3x16xf32>
}

// rope_backward is itself differentiable (its VJP is rope): second-order through rope.
// GRADS: check-grads @rope_backward: OK
// CHECK-LABEL: func.func @rope_backward_grad(
// CHECK: rlx.rope %d_output, %c, %s {head_dim = 4 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
func.func @rope_backward(%dy: tensor<3x8xf32> {rlx.name = "dy", rlx.param}, %c: tensor<3x2xf32> {rlx.name = "c"},
                         %s: tensor<3x2xf32> {rlx.name = "s"}) -> tensor<3x8xf32> {
  %dx = rlx.rope_backward %dy, %c, %s {head_dim = 4 : i64} : (tensor<3x8xf32>, tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
  func.return %dx : tensor<3x8xf32>
}
