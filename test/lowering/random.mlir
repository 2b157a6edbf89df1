// Counter-based random samples: one parallel linalg.generic hashing linalg.index with
// the key; native code and the interpreter print the same numbers.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-run %s --entry draw | FileCheck %s --check-prefix=DRAW
// RUN: rlx-run %s --entry draw --interpret | FileCheck %s --check-prefix=DRAW
// An i64 key draws by value: 42 as i64 gives the i32 key's numbers; both halves of the key
// seed the hash, so 42 + 2^32 draws others.
// RUN: rlx-run %s --entry draw64 | FileCheck %s --check-prefix=WIDE
// RUN: rlx-run %s --entry draw64 --interpret | FileCheck %s --check-prefix=WIDE

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

// WIDE: result 0: tensor<2x3xf32>
// WIDE-NEXT: {{\[\[}}0.144662, 0.821118, 0.721684],
// WIDE-NEXT: [0.908563, 0.553282, 0.507670]]
// WIDE: result 1: tensor<3xf32>
// WIDE-NOT: 0.144662
func.func @draw64() -> (tensor<2x3xf32>, tensor<3xf32>) {
  %key = rlx.constant {value = dense<42> : tensor<i64>} : () -> tensor<i64>
  %high = rlx.constant {value = dense<4294967338> : tensor<i64>} : () -> tensor<i64>
  %u = rlx.rng_uniform %key : (tensor<i64>) -> tensor<2x3xf32>
  %v = rlx.rng_uniform %high : (tensor<i64>) -> tensor<3xf32>
  func.return %u, %v : tensor<2x3xf32>, tensor<3xf32>
}
