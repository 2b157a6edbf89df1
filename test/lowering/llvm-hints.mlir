// LLVM hints of the fast pipeline: every loop reaches LLVM IR with unrolling disabled
// (the schedules already unrolled what pays; LLVM unrolling again doubled the machine
// code), and RLX_LLVM_UNROLL=1 leaves unrolling to LLVM.
// RUN: rlx-opt %s --lower-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s
// RUN: env RLX_LLVM_UNROLL=1 rlx-opt %s --lower-to-llvm | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=LLVMUNROLL

// A [64, 300] add: a loop over the rows around the vectorized row (and its remainder).
// CHECK-LABEL: define void @rows(
// CHECK: br {{.*}}, !llvm.loop ![[LOOP:[0-9]+]]
// CHECK: ![[LOOP]] = distinct !{![[LOOP]], ![[NOUNROLL:[0-9]+]]}
// CHECK: ![[NOUNROLL]] = !{!"llvm.loop.unroll.disable"}
// LLVMUNROLL-LABEL: define void @rows(
// LLVMUNROLL-NOT: llvm.loop
func.func @rows(%x: tensor<64x300xf32>, %y: tensor<64x300xf32>) -> tensor<64x300xf32> {
  %0 = rlx.add %x, %y : (tensor<64x300xf32>, tensor<64x300xf32>) -> tensor<64x300xf32>
  %1 = rlx.exp %0 : (tensor<64x300xf32>) -> tensor<64x300xf32>
  func.return %1 : tensor<64x300xf32>
}
