// Stages run by rlx-opt itself take no options (view-graph excepted): an option there is
// an error, not silently ignored.
// RUN: not rlx-opt %s --lower-to-llvm="bogus=1" 2>&1 | FileCheck %s --check-prefix=LLVM
// RUN: not rlx-opt %s -p 'check-grads{x=1}' 2>&1 | FileCheck %s --check-prefix=GRADS
// LLVM: error: --lower-to-llvm takes no options, got 'lower-to-llvm{bogus=1}'
// GRADS: error: --check-grads takes no options, got 'check-grads{x=1}'
func.func @f(%x: tensor<3xf32>) -> tensor<3xf32> {
  func.return %x : tensor<3xf32>
}
