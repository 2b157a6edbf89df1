// A function with at least RLX_SPLIT_MIN_OPS ops (nested ones included; default 600) is
// cut in two halves when it compiles on two threads: each half is a private function
// lowered in its own context on its own thread, and @f calls them. %h crosses the cut (an
// argument of the second half) and is also a result of @f: the first half writes it
// straight into @f's out-param (%arg21), with no copy. Each half's kernels carry its name.
// RUN: env RLX_NUM_THREADS=2 RLX_SPLIT_MIN_OPS=1 rlx-opt %s --lower-to-llvm | FileCheck %s
// RUN: env RLX_NUM_THREADS=1 RLX_SPLIT_MIN_OPS=1 rlx-opt %s --lower-to-llvm | FileCheck %s --check-prefix=WHOLE
// RUN: env RLX_NUM_THREADS=2 RLX_SPLIT_COMPILE=0 RLX_SPLIT_MIN_OPS=1 rlx-opt %s --lower-to-llvm | FileCheck %s --check-prefix=WHOLE

// CHECK-LABEL: llvm.func @f(
// CHECK: llvm.call @f__part0({{.*}}%arg21, %arg22, %arg23, %arg24, %arg25, %arg26, %arg27)
// CHECK: llvm.call @f__part1(
// CHECK-NOT: "llvm.intr.memcpy"
// CHECK: llvm.return
// CHECK-LABEL: llvm.func @f__part0(
// CHECK: llvm.call @f__part0_kernel_
// CHECK-LABEL: llvm.func @f__part1(
// CHECK: llvm.call @f__part1_kernel_
// WHOLE-NOT: __part
func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %h = rlx.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %e = rlx.exp %h : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = rlx.matmul %e, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  func.return %y, %h : tensor<4x8xf32>, tensor<4x8xf32>
}
