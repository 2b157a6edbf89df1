// RUN: not rlx-opt %s 2>&1 | FileCheck %s
// An op name rlx does not define: a located error naming the nearest ops.
// CHECK: unknown-op-invalid.mlir:7:8: error: Operation rlx.sum is not registered (did you mean rlx.reduce_sum, rlx.sub, rlx.cumsum?)
// CHECK-NOT: Traceback

func.func @f(%x: tensor<4x3xf32>) -> tensor<f32> {
  %s = rlx.sum %x {axes = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
