// RUN: rlx-run %s --interpret --entry softmax | FileCheck %s --check-prefix=SOFTMAX
// RUN: rlx-run %s --interpret --entry norms | FileCheck %s --check-prefix=NORMS
// RUN: rlx-run %s --interpret --entry cross_entropy | FileCheck %s --check-prefix=SCE
// RUN: rlx-run %s --interpret --entry rope | FileCheck %s --check-prefix=ROPE

// exp([0, ln2, ln5]) = [1, 2, 5]: softmax [1/8, 2/8, 5/8]; log_softmax their logs
// (a constant row gives -ln 3).
// The f64 row is offset by 1000 (exp overflows without the max shift).
// Axis 0 of [[0, 0], [ln3, 0]]: columns [1/4, 3/4] and [1/2, 1/2].
// SOFTMAX: result 0: tensor<2x3xf64>
// SOFTMAX-NEXT: {{\[\[}}0.125000, 0.250000, 0.625000],
// SOFTMAX-NEXT: [0.125000, 0.250000, 0.625000]]
// SOFTMAX-NEXT: result 1: tensor<2x3xf32>
// SOFTMAX-NEXT: {{\[\[}}-2.079442, -1.386294, -0.470004],
// SOFTMAX-NEXT: [-1.098612, -1.098612, -1.098612]]
// SOFTMAX-NEXT: result 2: tensor<2x2xf32>
// SOFTMAX-NEXT: {{\[\[}}0.250000, 0.500000],
// SOFTMAX-NEXT: [0.750000, 0.500000]]
func.func @softmax() -> (tensor<2x3xf64>, tensor<2x3xf32>, tensor<2x2xf32>) {
  %x = rlx.constant {value = dense<[[0.0, 0.6931471805599453, 1.6094379124341003], [1000.0, 1000.6931471805599453, 1001.6094379124341003]]> : tensor<2x3xf64>} : () -> tensor<2x3xf64>
  %y = rlx.constant {value = dense<[[0.0, 0.6931471805599453, 1.6094379124341003], [7.0, 7.0, 7.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %c = rlx.constant {value = dense<[[0.0, 0.0], [1.0986122886681098, 0.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %0 = rlx.softmax %x : (tensor<2x3xf64>) -> tensor<2x3xf64>
  %1 = rlx.log_softmax %y {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = rlx.softmax %c {axis = -2 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %0, %1, %2 : tensor<2x3xf64>, tensor<2x3xf32>, tensor<2x2xf32>
}

// layer_norm, eps = 3: [1, 1, 3, 3] has mean 2 and biased var 1, so x^ = [-1, -1, 1, 1] / 2;
// a constant row normalises to 0 and gives beta.
// NORMS: result 0: tensor<2x4xf32>
// NORMS-NEXT: {{\[\[}}-0.500000, 0.000000, 1.500000, 3.000000],
// NORMS-NEXT: [ 0.000000, 1.000000, 0.000000, 1.000000]]
// rms_norm, eps = 2: mean(x^2) = 7 in both rows, r = 1/3; gamma [1, 2, 3, 6], beta [0.5, 0, 0, 0].
// NORMS-NEXT: result 1: tensor<2x4xf32>
// NORMS-NEXT: {{\[\[}} 0.333333, 2.000000, 3.000000, 6.000000],
// NORMS-NEXT: [-0.333333, -2.000000, 3.000000, 6.000000]]
// NORMS-NEXT: result 2: tensor<2x4xf32>
// NORMS-NEXT: {{\[\[}} 0.833333, 2.000000, 3.000000, 6.000000],
// NORMS-NEXT: [ 0.166667, -2.000000, 3.000000, 6.000000]]
// group_norm, 2 groups, eps = 3: each group has mean +- 1 and var 1, so x^ = +-0.5;
// gamma [1, 2, 3, 4], beta [0, 0, 1, 1].
// NORMS-NEXT: result 3: tensor<1x4x2xf32>
// NORMS-NEXT: {{\[\[\[}}-0.500000, 0.500000],
// NORMS-NEXT: [-1.000000, 1.000000],
// NORMS-NEXT: [-0.500000, -0.500000],
// NORMS-NEXT: [ 3.000000, 3.000000]]]
// batch_norm_inference, channels last, eps = 1: sqrt(var + eps) = [2, 4].
// NORMS-NEXT: result 4: tensor<2x2xf32>
// NORMS-NEXT: {{\[\[}}0.000000, 1.000000],
// NORMS-NEXT: [2.000000, 3.500000]]
func.func @norms() -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4x2xf32>, tensor<2x2xf32>) {
  %x = rlx.constant {value = dense<[[1.0, 1.0, 3.0, 3.0], [5.0, 5.0, 5.0, 5.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %g = rlx.constant {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %b = rlx.constant {value = dense<[0.0, 1.0, 0.0, 1.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %ln = rlx.layer_norm %x, %g, %b {eps = 3.0 : f32} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = rlx.constant {value = dense<[[1.0, 3.0, 3.0, 3.0], [-1.0, -3.0, 3.0, 3.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %rg = rlx.constant {value = dense<[1.0, 2.0, 3.0, 6.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %rb = rlx.constant {value = dense<[0.5, 0.0, 0.0, 0.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %rms = rlx.rms_norm %r, %rg {eps = 2.0 : f32} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %rmsb = rlx.rms_norm %r, %rg, %rb {axis = 1 : i64, eps = 2.0 : f32} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %gx = rlx.constant {value = dense<[[[1.0, 3.0], [1.0, 3.0], [0.0, 0.0], [2.0, 2.0]]]> : tensor<1x4x2xf32>} : () -> tensor<1x4x2xf32>
  %gb = rlx.constant {value = dense<[0.0, 0.0, 1.0, 1.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %gn = rlx.group_norm %gx, %g, %gb {num_groups = 2 : i64, eps = 3.0 : f32} : (tensor<1x4x2xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2xf32>
  %bx = rlx.constant {value = dense<[[1.0, 10.0], [3.0, 20.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %bg = rlx.constant {value = dense<[2.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bb = rlx.constant {value = dense<[0.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bm = rlx.constant {value = dense<[1.0, 10.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bv = rlx.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bn = rlx.batch_norm_inference %bx, %bg, %bb, %bm, %bv {eps = 1.0 : f32} : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  func.return %ln, %rms, %rmsb, %gn, %bn : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<1x4x2xf32>, tensor<2x2xf32>
}

// Rows [0, ln2, ln5] (logsumexp ln 8), [1000]*3 (ln 3 after the shift), again [0, ln2, ln5],
// and [0]*3 (ln 3). i64 labels [2, 0, 7, -1]: ln(8/5), ln 3, then out of range -> logsumexp.
// f32 labels [2, 0, 1.9, 3]: 1.9 truncates to class 1 (ln(8/2)); 3 is out of range.
// SCE: result 0: tensor<4xf32>
// SCE-NEXT: [0.470004, 1.098612, 2.079442, 1.098612]
// SCE-NEXT: result 1: tensor<4xf32>
// SCE-NEXT: [0.470004, 1.098612, 1.386294, 1.098612]
func.func @cross_entropy() -> (tensor<4xf32>, tensor<4xf32>) {
  %z = rlx.constant {value = dense<[[0.0, 0.6931471805599453, 1.6094379124341003], [1000.0, 1000.0, 1000.0], [0.0, 0.6931471805599453, 1.6094379124341003], [0.0, 0.0, 0.0]]> : tensor<4x3xf32>} : () -> tensor<4x3xf32>
  %t = rlx.constant {value = dense<[2, 0, 7, -1]> : tensor<4xi64>} : () -> tensor<4xi64>
  %tf = rlx.constant {value = dense<[2.0, 0.0, 1.9, 3.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = rlx.softmax_cross_entropy %z, %t : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<4xf32>
  %1 = rlx.softmax_cross_entropy %z, %tf : (tensor<4x3xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// cos = [[0.5, 1], [0, 0.5]], sin = [[0.75, 0], [1, 0.25]] (exact in f32; need not be a rotation).
// head_dim 4 (half 2), position 0 on [5, 6, 7, 8]: [5*.5 - 7*.75, 6, 7*.5 + 5*.75, 8];
// position 1 on [1, 2, 3, 4]: [-3, 2*.5 - 4*.25, 1, 4*.5 + 2*.25].
// ROPE: result 0: tensor<2x4xf32>
// ROPE-NEXT: {{\[\[}}-2.750000, 6.000000, 7.250000, 8.000000],
// ROPE-NEXT: [-3.000000, 0.000000, 1.000000, 2.500000]]
// n_rot 2 on two heads of 4 (half 1, only column 0 of the tables); dims 2, 3 pass through.
// ROPE-NEXT: result 1: tensor<1x2x8xf32>
// ROPE-NEXT: {{\[\[\[}} 0.500000, 0.750000, 5.000000, 5.000000, -0.750000, 0.500000, 5.000000, 5.000000],
// ROPE-NEXT: [-2.000000, 1.000000, 3.000000, 4.000000, -6.000000, 5.000000, 7.000000, 8.000000]]]
func.func @rope() -> (tensor<2x4xf32>, tensor<1x2x8xf32>) {
  %cos = rlx.constant {value = dense<[[0.5, 1.0], [0.0, 0.5]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %sin = rlx.constant {value = dense<[[0.75, 0.0], [1.0, 0.25]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %x = rlx.constant {value = dense<[[5.0, 6.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
  %y = rlx.constant {value = dense<[[[1.0, 0.0, 5.0, 5.0, 0.0, 1.0, 5.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]]]> : tensor<1x2x8xf32>} : () -> tensor<1x2x8xf32>
  %0 = rlx.rope %x, %cos, %sin {head_dim = 4 : i64} : (tensor<2x4xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x4xf32>
  %1 = rlx.rope %y, %cos, %sin {head_dim = 4 : i64, n_rot = 2 : i64} : (tensor<1x2x8xf32>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x8xf32>
  func.return %0, %1 : tensor<2x4xf32>, tensor<1x2x8xf32>
}
