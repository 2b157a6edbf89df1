// rlx-run --entry may name a private function, natively as with --interpret.
// RUN: rlx-run %s --entry helper | FileCheck %s --check-prefix=HELPER
// RUN: rlx-run %s --entry helper --interpret | FileCheck %s --check-prefix=HELPER
// HELPER: result 0: tensor<4xf32>
// HELPER-NEXT: [ 0.125072, -0.131342,  0.565187,  0.104517]

// An --input that does not fit is one located error (not "error: error:"), and an
// .npz archive is refused by name.
// RUN: python -c "import numpy as np; np.save(r'%t.shape.npy', np.zeros((4, 3), np.float32)); np.save(r'%t.dtype.npy', np.zeros((3, 4), np.int32)); np.savez(r'%t.npz', w=np.zeros((3, 4), np.float32))"
// RUN: not rlx-run %s --input w=%t.shape.npy 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not rlx-run %s --input w=%t.shape.npy --interpret 2>&1 | FileCheck %s --check-prefix=SHAPE
// RUN: not rlx-run %s --input w=%t.dtype.npy 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not rlx-run %s --input w=%t.npz 2>&1 | FileCheck %s --check-prefix=NPZ
// SHAPE: run-entry-and-inputs.mlir:[[@LINE+10]]:3: error: argument 'w' of @loss: expected shape (3, 4), got (4, 3)
// SHAPE-NOT: error: error
// DTYPE: run-entry-and-inputs.mlir:[[@LINE+8]]:3: error: argument 'w' of @loss: expected dtype float32 (f32), got int32
// NPZ: error: --input w: '{{.*}}.npz' is an archive; .npz archives are not supported: save one array with np.save

// `-` reads stdin.
// RUN: rlx-run - --entry helper < %s | FileCheck %s --check-prefix=HELPER
// RUN: rlx-opt - < %s | FileCheck %s --check-prefix=STDIN
// STDIN: module @m
module @m {
  func.func @loss(%w: tensor<3x4xf32> {rlx.param}, %x: tensor<2x3xf32>) -> tensor<f32> {
    %0 = rlx.matmul %x, %w : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %1 = rlx.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<f32>
    func.return %1 : tensor<f32>
  }
  func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    %0 = rlx.tanh %x : (tensor<4xf32>) -> tensor<4xf32>
    func.return %0 : tensor<4xf32>
  }
}
