// RUN: not rlx-run %s 2>&1 | FileCheck %s
// RUN: not rlx-run %s --interpret 2>&1 | FileCheck %s
// A function to run takes numpy arrays: a scalar (non-tensor) argument is a located
// error naming the tensor type to use (it was an internal ShapeError).
// CHECK: non-tensor-signature.mlir:6:1: error: argument #0 of @f has type f32; a function to run takes and returns ranked tensors (tensor<f32> for a scalar)
func.func @f(%a: f32) -> f32 {
  func.return %a : f32
}
