// The second half of a split function returns a scalar next to a buffer: the declaration
// in the first module gets the buffer as a trailing out-param and keeps the f32 result,
// as buffer-results-to-out-params made of the definition in the second module.
// RUN: env RLX_NUM_THREADS=2 RLX_SPLIT_MIN_OPS=1 rlx-opt %s --lower-to-llvm | FileCheck %s

// CHECK-LABEL: llvm.func @f(
// CHECK: llvm.call @f__part0(
// CHECK: %{{.*}} = llvm.call @f__part1({{.*}}) : ({{.*}}) -> f32
// CHECK-LABEL: llvm.func @f__part1(
// CHECK-SAME: -> f32
func.func @f(%x: tensor<4xf32>, %s: f32) -> (tensor<4xf32>, f32) {
  %a = rlx.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
  %b = rlx.exp %a : (tensor<4xf32>) -> tensor<4xf32>
  %u = arith.addf %s, %s : f32
  return %b, %u : tensor<4xf32>, f32
}
