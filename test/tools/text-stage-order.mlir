// --lower-to-llvm and --check-grads print text, not a module: a stage after them is an
// error (before any work), not silently dropped.
// RUN: not rlx-opt %s --lower-to-llvm --cse 2>&1 | FileCheck %s --check-prefix=LLVM
// RUN: not rlx-opt %s -p 'lower-to-llvm,cse' 2>&1 | FileCheck %s --check-prefix=LLVM
// RUN: not rlx-opt %s --autodiff --check-grads --lower-to-llvm 2>&1 | FileCheck %s --check-prefix=GRADS
// LLVM: error: --cse after --lower-to-llvm: the LLVM-dialect output is upstream MLIR text; run further passes with mlir-opt
// GRADS: error: --lower-to-llvm after --check-grads: --check-grads prints a report instead of the module; make it the last stage

// Further passes run with upstream mlir-opt (docs/cli.md; lit substitutes its path in the venv).
// RUN: rlx-opt %s --autodiff --lower-to-llvm | mlir-opt --cse | FileCheck %s --check-prefix=PIPE
// PIPE: llvm.func @f_grad(

func.func @f(%x: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
