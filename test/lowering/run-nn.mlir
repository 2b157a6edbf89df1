// Native (JIT) results of the nn family and its backward ops on hand-checkable inputs;
// the same CHECK lines hold for the interpreter.
// RUN: rlx-run %s --entry softmax | FileCheck %s --check-prefix=SOFTMAX
// RUN: rlx-run %s --entry softmax --interpret | FileCheck %s --check-prefix=SOFTMAX
// RUN: rlx-run %s --entry norms | FileCheck %s --check-prefix=NORMS
// RUN: rlx-run %s --entry norms --interpret | FileCheck %s --check-prefix=NORMS
// RUN: rlx-run %s --entry cross_entropy | FileCheck %s --check-prefix=CE
// RUN: rlx-run %s --entry cross_entropy --interpret | FileCheck %s --check-prefix=CE
// RUN: rlx-run %s --entry rope | FileCheck %s --check-prefix=ROPE
// RUN: rlx-run %s --entry rope --interpret | FileCheck %s --check-prefix=ROPE
// RUN: rlx-run %s --entry backward | FileCheck %s --check-prefix=BACK
// RUN: rlx-run %s --entry backward --interpret | FileCheck %s --check-prefix=BACK

// softmax([0, 0, ln 2]) = [1/4, 1/4, 1/2]; its log; f64 along axis 0.
// SOFTMAX: result 0: tensor<3xf32>
// SOFTMAX-NEXT: [0.250000, 0.250000, 0.500000]
// SOFTMAX: result 1: tensor<3xf32>
// SOFTMAX-NEXT: [-1.386294, -1.386294, -0.693147]
// SOFTMAX: result 2: tensor<3x1xf64>
// SOFTMAX-NEXT: {{\[\[}}0.250000],
// SOFTMAX-NEXT: [0.250000],
// SOFTMAX-NEXT: [0.500000]]
func.func @softmax() -> (tensor<3xf32>, tensor<3xf32>, tensor<3x1xf64>) {
  %x = rlx.constant {value = dense<[0.0, 0.0, 0.6931471805599453]> : tensor<3xf32>} : () -> tensor<3xf32>
  %d = rlx.constant {value = dense<[[0.0], [0.0], [0.6931471805599453]]> : tensor<3x1xf64>} : () -> tensor<3x1xf64>
  %s = rlx.softmax %x : (tensor<3xf32>) -> tensor<3xf32>
  %l = rlx.log_softmax %x : (tensor<3xf32>) -> tensor<3xf32>
  %c = rlx.softmax %d {axis = 0 : i64} : (tensor<3x1xf64>) -> tensor<3x1xf64>
  func.return %s, %l, %c : tensor<3xf32>, tensor<3xf32>, tensor<3x1xf64>
}

// eps = 0 throughout. Layer norm of rows [1, 3], [0, 4] is [-1, 1] each, times gamma
// [2, 3] plus beta [0.5, 0]. RMS norm of [3, 4] is [3, 4] / sqrt(12.5), of [-2, 2] is
// [-1, 1], plus beta [0, 1]. Group norm (1 group) of [[1, 3], [1, 3]] is [[-1, 1],
// [-1, 1]], times gamma [1, 2] plus beta [0, 10]. Batch norm: (x - [1, 2]) / sqrt([4,
// 0.25]) * [1, 2] + [0, 1].
// NORMS: result 0: tensor<2x2xf32>
// NORMS-NEXT: {{\[\[}}-1.500000,  3.000000],
// NORMS-NEXT: [-1.500000,  3.000000]]
// NORMS: result 1: tensor<2x2xf32>
// NORMS-NEXT: {{\[\[}} 0.848528,  2.131371],
// NORMS-NEXT: [-1.000000,  2.000000]]
// NORMS: result 2: tensor<1x2x2xf32>
// NORMS-NEXT: {{\[\[\[}}-1.000000,  1.000000],
// NORMS-NEXT: [ 8.000000, 12.000000]]]
// NORMS: result 3: tensor<2x2xf32>
// NORMS-NEXT: {{\[\[}}0.000000, 1.000000],
// NORMS-NEXT: [1.000000, 9.000000]]
func.func @norms() -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<1x2x2xf32>, tensor<2x2xf32>) {
  %x = rlx.constant {value = dense<[[1.0, 3.0], [0.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %g = rlx.constant {value = dense<[2.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = rlx.constant {value = dense<[0.5, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %ln = rlx.layer_norm %x, %g, %b {eps = 0.0 : f32} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %r = rlx.constant {value = dense<[[3.0, 4.0], [-2.0, 2.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %ones = rlx.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %rb = rlx.constant {value = dense<[0.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %rms = rlx.rms_norm %r, %ones, %rb {eps = 0.0 : f32} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  %gx = rlx.constant {value = dense<[[[1.0, 3.0], [1.0, 3.0]]]> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %gg = rlx.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %gb = rlx.constant {value = dense<[0.0, 10.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %gn = rlx.group_norm %gx, %gg, %gb {num_groups = 1 : i64, eps = 0.0 : f32} : (tensor<1x2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2xf32>
  %bx = rlx.constant {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %m = rlx.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %v = rlx.constant {value = dense<[4.0, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bn = rlx.batch_norm_inference %bx, %gg, %rb, %m, %v {eps = 0.0 : f32} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %ln, %rms, %gn, %bn : tensor<2x2xf32>, tensor<2x2xf32>, tensor<1x2x2xf32>, tensor<2x2xf32>
}

// Rows [0, 0, ln 2]: logsumexp = ln 4. Labels 2 -> ln 2, 0 -> ln 4, 5 (out of range)
// -> ln 4; f32 labels 2.7 -> class 2, -0.5 -> class 0, -1 -> none. The backward
// (d_loss [1, 1, 2]) is (softmax - one-hot) * d_loss.
// CE: result 0: tensor<3xf32>
// CE-NEXT: [0.693147, 1.386294, 1.386294]
// CE: result 1: tensor<3xf32>
// CE-NEXT: [0.693147, 1.386294, 1.386294]
// CE: result 2: tensor<3x3xf32>
// CE-NEXT: {{\[\[}} 0.250000,  0.250000, -0.500000],
// CE-NEXT: [-0.750000,  0.250000,  0.500000],
// CE-NEXT: [ 0.500000,  0.500000,  1.000000]]
func.func @cross_entropy() -> (tensor<3xf32>, tensor<3xf32>, tensor<3x3xf32>) {
  %z = rlx.constant {value = dense<[[0.0, 0.0, 0.6931471805599453], [0.0, 0.0, 0.6931471805599453], [0.0, 0.0, 0.6931471805599453]]> : tensor<3x3xf32>} : () -> tensor<3x3xf32>
  %t = rlx.constant {value = dense<[2, 0, 5]> : tensor<3xi64>} : () -> tensor<3xi64>
  %tf = rlx.constant {value = dense<[2.7, -0.5, -1.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %dl = rlx.constant {value = dense<[1.0, 1.0, 2.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %l = rlx.softmax_cross_entropy %z, %t : (tensor<3x3xf32>, tensor<3xi64>) -> tensor<3xf32>
  %lf = rlx.softmax_cross_entropy %z, %tf : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %dz = rlx.softmax_cross_entropy_backward %z, %t, %dl : (tensor<3x3xf32>, tensor<3xi64>, tensor<3xf32>) -> tensor<3x3xf32>
  func.return %l, %lf, %dz : tensor<3xf32>, tensor<3xf32>, tensor<3x3xf32>
}

// cos = [0, 1], sin = [1, 0]: a quarter turn of the pair (x0, x2), (x1, x3) unchanged:
// rope [1, 2, 3, 4] -> [-3, 2, 1, 4]; rope_backward turns back: [3, 2, -1, 4].
// n_rot = 2 on two heads of 4: only (x0, x1) of each head turns; x2, x3 pass through.
// ROPE: result 0: tensor<1x4xf32>
// ROPE-NEXT: {{\[\[}}-3.000000,  2.000000,  1.000000,  4.000000]]
// ROPE: result 1: tensor<1x4xf32>
// ROPE-NEXT: {{\[\[}} 3.000000,  2.000000, -1.000000,  4.000000]]
// ROPE: result 2: tensor<1x1x8xf32>
// ROPE-NEXT: {{\[\[\[}}-2.000000,  1.000000,  3.000000,  4.000000, -6.000000,  5.000000,  7.000000,  8.000000]]]
func.func @rope() -> (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x1x8xf32>) {
  %x = rlx.constant {value = dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>} : () -> tensor<1x4xf32>
  %c = rlx.constant {value = dense<[[0.0, 1.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %s = rlx.constant {value = dense<[[1.0, 0.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %y = rlx.rope %x, %c, %s {head_dim = 4 : i64} : (tensor<1x4xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x4xf32>
  %dx = rlx.rope_backward %x, %c, %s {head_dim = 4 : i64} : (tensor<1x4xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x4xf32>
  %x8 = rlx.constant {value = dense<[[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]]> : tensor<1x1x8xf32>} : () -> tensor<1x1x8xf32>
  %c2 = rlx.constant {value = dense<[[0.0, 0.5]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %s2 = rlx.constant {value = dense<[[1.0, 0.5]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %p = rlx.rope %x8, %c2, %s2 {head_dim = 4 : i64, n_rot = 2 : i64} : (tensor<1x1x8xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x1x8xf32>
  func.return %y, %dx, %p : tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x1x8xf32>
}

// eps = 0. Layer norm dgamma: x_hat = [[-1, 1], [-1, 1]], dy = [[1, 2], [3, 4]] -> [-4, 6].
// RMS norm dx of x = [3, 4], gamma 1, dy = [1, 0]: r = 1/sqrt(12.5), x_hat = r x,
// r * (dy - x_hat * mean(dy * x_hat)) = r * [1 - 0.36, -0.48] = [0.181019, -0.135765].
// Batch norm (sqrt(var) = [2, 1/2]): dx = dy * gamma / sqrt(var) = [[1/2, 8], [3/2, 16]],
// dgamma = sum of dy * (x - mean) / sqrt(var) = [3 * 2 / 2, 4 * 2 * 2] = [3, 16], dbeta = [4, 6]. Group norm dbeta = [3, 7].
// BACK: result 0: tensor<2xf32>
// BACK-NEXT: [-4.000000,  6.000000]
// BACK: result 1: tensor<1x2xf32>
// BACK-NEXT: {{\[\[}} 0.181019, -0.135765]]
// BACK: result 2: tensor<2x2xf32>
// BACK-NEXT: {{\[\[}} 0.500000,  8.000000],
// BACK-NEXT: [ 1.500000, 16.000000]]
// BACK: result 3: tensor<2xf32>
// BACK-NEXT: [ 3.000000, 16.000000]
// BACK: result 4: tensor<2xf32>
// BACK-NEXT: [4.000000, 6.000000]
// BACK: result 5: tensor<2xf32>
// BACK-NEXT: [3.000000, 7.000000]
func.func @backward() -> (tensor<2xf32>, tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
  %x = rlx.constant {value = dense<[[1.0, 3.0], [0.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %dy = rlx.constant {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %dg = rlx.layer_norm_backward_gamma %x, %dy {eps = 0.0 : f32} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2xf32>
  %r = rlx.constant {value = dense<[[3.0, 4.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %ones = rlx.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %rdy = rlx.constant {value = dense<[[1.0, 0.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %rdx = rlx.rms_norm_backward_input %r, %ones, %rdy {eps = 0.0 : f32} : (tensor<1x2xf32>, tensor<2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
  %bx = rlx.constant {value = dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %g = rlx.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %m = rlx.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %v = rlx.constant {value = dense<[4.0, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bdx = rlx.batch_norm_inference_backward_input %g, %v, %dy {eps = 0.0 : f32} : (tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %bdg = rlx.batch_norm_inference_backward_gamma %bx, %m, %v, %dy {eps = 0.0 : f32} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2x2xf32>) -> tensor<2xf32>
  %bdb = rlx.batch_norm_inference_backward_beta %dy : (tensor<2x2xf32>) -> tensor<2xf32>
  %gdy = rlx.constant {value = dense<[[[1.0, 2.0], [3.0, 4.0]]]> : tensor<1x2x2xf32>} : () -> tensor<1x2x2xf32>
  %gdb = rlx.group_norm_backward_beta %gdy : (tensor<1x2x2xf32>) -> tensor<2xf32>
  func.return %dg, %rdx, %bdx, %bdg, %bdb, %gdb : tensor<2xf32>, tensor<1x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
}
