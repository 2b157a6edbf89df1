// LLVM hints of the fast pipeline: every loop around vector code reaches LLVM IR with
// unrolling disabled (the schedules already unrolled what pays; LLVM unrolling again
// doubled the machine code), scalar loops are left to LLVM, and RLX_LLVM_UNROLL=1
// leaves every loop to LLVM. A function with a scalar loop (not a fill) is marked
// rlx.scalar_loops: its code generation part gets LLVM's whole O2 pipeline (or, when every
// scalar loop writes elements apart, rlx.parallel_loops: its loop vectorizer), the others
// the light one (llvm_hints.llvm_passes).
// RUN: rlx-opt %s --lower-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s
// RUN: rlx-opt %s --lower-to-llvm | FileCheck %s --check-prefix=KIND
// RUN: env RLX_LLVM_UNROLL=1 rlx-opt %s --lower-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMUNROLL

// A row sum: its accumulator's fill is a scalar store loop (LLVM makes it a memset in
// either pipeline) and the reduction is vector code: neither kernel is marked.
// KIND: llvm.func @row_sums_kernel_0(
// KIND-NOT: rlx.scalar_loops
// KIND-SAME: sym_visibility = "private"} {
// KIND: llvm.func @row_sums_kernel_1(
// KIND-NOT: rlx.scalar_loops
// KIND-SAME: sym_visibility = "private"} {
func.func @row_sums(%x: tensor<64x256xf32>) -> tensor<64xf32> {
  %0 = rlx.reduce_sum %x {axes = array<i64: 1>} : (tensor<64x256xf32>) -> tensor<64xf32>
  func.return %0 : tensor<64xf32>
}

// A [64, 256] add + exp: loops over the rows and 64-lane chunks of vector code (in the
// function's outlined kernel, after the public functions).
// CHECK-LABEL: define void @rows_kernel_{{[0-9]+}}(
// KIND: llvm.func @rows_kernel_0(
// KIND-NOT: rlx.scalar_loops
// KIND-SAME: sym_visibility = "private"} {
// CHECK: br {{.*}}, !llvm.loop ![[LOOP:[0-9]+]]
// LLVMUNROLL-NOT: llvm.loop
func.func @rows(%x: tensor<64x256xf32>, %y: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %0 = rlx.add %x, %y : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
  %1 = rlx.exp %0 : (tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %1 : tensor<64x256xf32>
}

// A column gather reads each element through an index: scalar loops, left to LLVM;
// each iteration writes its own element, so LLVM's loop vectorizer is all they get
// (rlx.parallel_loops: llvm_hints.PARALLEL_PASSES instead of the whole O2).
// CHECK-LABEL: define void @scalar_rows_kernel_{{[0-9]+}}(
// KIND: llvm.func @scalar_rows_kernel_0(
// KIND-SAME: rlx.parallel_loops, rlx.scalar_loops
// CHECK-NOT: !llvm.loop
// CHECK: ![[LOOP]] = distinct !{![[LOOP]], ![[NOUNROLL:[0-9]+]]}
// CHECK: ![[NOUNROLL]] = !{!"llvm.loop.unroll.disable"}
func.func @scalar_rows(%t: tensor<100x300xf32>, %i: tensor<64xi32>) -> tensor<100x64xf32> {
  %0 = rlx.gather %t, %i {axis = 1 : i64} : (tensor<100x300xf32>, tensor<64xi32>) -> tensor<100x64xf32>
  func.return %0 : tensor<100x64xf32>
}
