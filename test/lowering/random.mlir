// Counter-based random samples: one parallel linalg.generic hashing linalg.index with
// the key; native code and the interpreter print the same numbers.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-run %s --entry draw | FileCheck %s --check-prefix=DRAW
// RUN: rlx-run %s --entry draw --interpret | FileCheck %s --check-prefix=DRAW

// CHECK-LABEL: func.func @draw
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: arith.shrui
// CHECK: arith.xori
// CHECK: arith.uitofp
// CHECK-NOT: rlx.
// DRAW: result 0: tensor<2x3xf32>
// DRAW-NEXT: {{\[\[}}0.144662, 0.821118, 0.721684],
// DRAW-NEXT: [0.908563, 0.553282, 0.507670]]
// DRAW: result 1: tensor<4xf64>
// DRAW-NEXT: [-1.453692, -0.578813,  0.593625,  0.427347]
func.func @draw() -> (tensor<2x3xf32>, tensor<4xf64>) {
  %key = rlx.constant {value = dense<42> : tensor<i32>} : () -> tensor<i32>
  %u = rlx.rng_uniform %key : (tensor<i32>) -> tensor<2x3xf32>
  %n = rlx.rng_normal %key : (tensor<i32>) -> tensor<4xf64>
  func.return %u, %n : tensor<2x3xf32>, tensor<4xf64>
}
