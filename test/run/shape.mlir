// RUN: rlx-run %s --interpret | FileCheck %s

// transpose perm [-1, 0]
// CHECK: result 0: tensor<3x2xf32>
// CHECK-NEXT: {{\[\[}}0.000000, 3.000000],
// CHECK-NEXT:  [1.000000, 4.000000],
// CHECK-NEXT:  [2.000000, 5.000000]]
// expand [3] -> [2, 2, 3]
// CHECK-NEXT: result 1: tensor<2x2x3xf32>
// CHECK-NEXT: {{\[\[\[}}10.000000, 20.000000, 30.000000],
// CHECK-NEXT:   [10.000000, 20.000000, 30.000000]],
// CHECK-EMPTY:
// CHECK-NEXT:  {{\[\[}}10.000000, 20.000000, 30.000000],
// CHECK-NEXT:   [10.000000, 20.000000, 30.000000]]]
// narrow [1, 6) of concat(x, x) on the last axis
// CHECK-NEXT: result 2: tensor<2x5xf32>
// CHECK-NEXT: {{\[\[}}1.000000, 2.000000, 0.000000, 1.000000, 2.000000],
// CHECK-NEXT:  [4.000000, 5.000000, 3.000000, 4.000000, 5.000000]]
// scatter_add into extent 2: column 0 gets h[:, 0] + h[:, 2]; indices 2 and 5 are dropped
// CHECK-NEXT: result 3: tensor<2x2xf32>
// CHECK-NEXT: {{\[\[}}2.000000, 0.000000],
// CHECK-NEXT:  [8.000000, 0.000000]]
// reshape f64 [6] -> [2, 3]
// CHECK-NEXT: result 4: tensor<2x3xf64>
// CHECK-NEXT: {{\[\[}} 1.500000, -2.500000,  4.000000],
// CHECK-NEXT:  [ 0.250000,  8.000000, -1.000000]]
// embedding gather, 2-D indices; 7 is clamped to row 2
// CHECK-NEXT: result 5: tensor<2x2x3xi64>
// CHECK-NEXT: {{\[\[\[}}7, 8, 9],
// CHECK-NEXT:   [1, 2, 3]],
// CHECK-EMPTY:
// CHECK-NEXT:  {{\[\[}}4, 5, 6],
// CHECK-NEXT:   [7, 8, 9]]]
// gather on axis 1, f32 indices [2.9, -1.0, 0.0, 9.0] -> columns [2, 0 (clamped), 0, 2 (clamped)]
// CHECK-NEXT: result 6: tensor<2x4xf32>
// CHECK-NEXT: {{\[\[}}2.000000, 0.000000, 0.000000, 2.000000],
// CHECK-NEXT:  [5.000000, 3.000000, 3.000000, 5.000000]]
// rows 0-1: scatter_add into extent 3 (u), rows 2-3: x
// CHECK-NEXT: result 7: tensor<4x3xf32>
// CHECK-NEXT: {{\[\[}}2.000000, 0.000000, 0.000000],
// CHECK-NEXT:  [8.000000, 0.000000, 3.000000],
// CHECK-NEXT:  [0.000000, 1.000000, 2.000000],
// CHECK-NEXT:  [3.000000, 4.000000, 5.000000]]

// x = [[0, 1, 2], [3, 4, 5]]
func.func @shape_ops() -> (tensor<3x2xf32>, tensor<2x2x3xf32>, tensor<2x5xf32>, tensor<2x2xf32>,
                           tensor<2x3xf64>, tensor<2x2x3xi64>, tensor<2x4xf32>, tensor<4x3xf32>) {
  %x = rlx.constant {value = dense<[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %row = rlx.constant {value = dense<[10.0, 20.0, 30.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %d = rlx.constant {value = dense<[1.5, -2.5, 4.0, 0.25, 8.0, -1.0]> : tensor<6xf64>} : () -> tensor<6xf64>
  %ids = rlx.constant {value = dense<[[2, 0], [1, 7]]> : tensor<2x2xi64>} : () -> tensor<2x2xi64>
  %table = rlx.constant {value = dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> : tensor<3x3xi64>} : () -> tensor<3x3xi64>
  %fids = rlx.constant {value = dense<[2.9, -1.0, 0.0, 9.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %sids = rlx.constant {value = dense<[0, 2, 0, 5]> : tensor<4xi32>} : () -> tensor<4xi32>

  %t = rlx.transpose %x {perm = array<i64: -1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %e = rlx.expand %row : (tensor<3xf32>) -> tensor<2x2x3xf32>
  %c = rlx.concat %x, %x {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %n = rlx.narrow %c {axis = 1 : i64, start = 1 : i64, length = 5 : i64} : (tensor<2x6xf32>) -> tensor<2x5xf32>
  %r = rlx.reshape %d : (tensor<6xf64>) -> tensor<2x3xf64>
  %g = rlx.gather %table, %ids : (tensor<3x3xi64>, tensor<2x2xi64>) -> tensor<2x2x3xi64>
  %h = rlx.gather %x, %fids {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %s = rlx.scatter_add %h, %sids {axis = -1 : i64} : (tensor<2x4xf32>, tensor<4xi32>) -> tensor<2x2xf32>
  %u = rlx.scatter_add %h, %sids {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xi32>) -> tensor<2x3xf32>
  %v = rlx.transpose %u {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %w = rlx.concat %v, %t {axis = 1 : i64} : (tensor<3x2xf32>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %z = rlx.transpose %w {perm = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<4x3xf32>
  func.return %t, %e, %n, %s, %r, %g, %h, %z : tensor<3x2xf32>, tensor<2x2x3xf32>, tensor<2x5xf32>, tensor<2x2xf32>,
                                             tensor<2x3xf64>, tensor<2x2x3xi64>, tensor<2x4xf32>, tensor<4x3xf32>
}
