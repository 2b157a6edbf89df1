// rlx.grouped_matmul lowers to a counting sort of the tokens by expert (scalar scf.for
// loops), a gather of the rows into expert-sorted blocks, one static matmul per block in
// an scf.forall over column tiles, and a gather back into token order; native code and
// the interpreter print the same values.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-run %s --entry experts | FileCheck %s --check-prefix=VAL
// RUN: rlx-run %s --entry experts --interpret | FileCheck %s --check-prefix=VAL

// CHECK-LABEL: func.func @experts
// The sort: count per expert, give each expert its blocks, place each token.
// CHECK: scf.for
// CHECK: tensor.insert
// CHECK: scf.for
// CHECK: scf.for
// CHECK: scf.for
// One [16, K] x [K, N] matmul per used block, the blocks an scf.for in a column forall.
// CHECK: scf.forall
// CHECK: scf.for
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x2xf32>, tensor<2x2xf32>)
// The weight gradient: per (expert, column tile), the expert's blocks summed.
// CHECK: scf.forall
// CHECK: scf.for
// CHECK: linalg.generic
// CHECK-SAME: iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-NOT: rlx.

// x = [[1, 2], [3, 4], [5, 6]]; w[0] = I, w[1] = [[1, 1], [0, 2]]; ids [1, 0, 7] (7 is
// clamped to expert 1). dw with dy = 1: dw[0] = x1^T 1, dw[1] = (x0 + x2)^T 1.
// VAL: result 0: tensor<3x2xf32>
// VAL-NEXT: {{\[\[}} 1.000000,  5.000000],
// VAL-NEXT: [ 3.000000,  4.000000],
// VAL-NEXT: [ 5.000000, 17.000000]]
// VAL: result 1: tensor<2x2x2xf32>
// VAL-NEXT: {{\[\[\[}}3.000000, 3.000000],
// VAL-NEXT: [4.000000, 4.000000]],
// VAL-EMPTY:
// VAL-NEXT: {{\[\[}}6.000000, 6.000000],
// VAL-NEXT: [8.000000, 8.000000]]]
func.func @experts() -> (tensor<3x2xf32>, tensor<2x2x2xf32>) {
  %x = rlx.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %w = rlx.constant {value = dense<[[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 2.0]]]> : tensor<2x2x2xf32>} : () -> tensor<2x2x2xf32>
  %ids = rlx.constant {value = dense<[1, 0, 7]> : tensor<3xi32>} : () -> tensor<3xi32>
  %dy = rlx.constant {value = dense<1.0> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  %y = rlx.grouped_matmul %x, %w, %ids : (tensor<3x2xf32>, tensor<2x2x2xf32>, tensor<3xi32>) -> tensor<3x2xf32>
  %dw = rlx.grouped_matmul_backward_weight %x, %dy, %ids {experts = 2 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3xi32>) -> tensor<2x2x2xf32>
  func.return %y, %dw : tensor<3x2xf32>, tensor<2x2x2xf32>
}
