// Adding a function whose name is taken is an error located at the existing function
// (here the one the first pass added, which carries @f's location), not an unlocated
// "Redefinition of symbol".
// RUN: not rlx-opt %s --autodiff --autodiff 2>&1 | FileCheck %s --check-prefix=GRAD
// RUN: not rlx-opt %s --jvp --jvp 2>&1 | FileCheck %s --check-prefix=JVP
// RUN: not rlx-opt %s --vmap="batched=x size=2" -p 'vmap{batched=x size=3}' 2>&1 | FileCheck %s --check-prefix=VMAP
// GRAD: duplicate-symbols.mlir:[[@LINE+4]]:1: error: @f_grad already exists in the module; cannot add the gradient of @f under that name (remove or rename the existing function)
// JVP: duplicate-symbols.mlir:[[@LINE+3]]:1: error: @f_jvp already exists in the module; cannot add the JVP of @f under that name
// VMAP: duplicate-symbols.mlir:[[@LINE+2]]:1: error: @f_vmap already exists in the module; cannot add the batched version of @f under that name

func.func @f(%x: tensor<3xf32> {rlx.param}) -> tensor<f32> {
  %0 = rlx.tanh %x : (tensor<3xf32>) -> tensor<3xf32>
  %1 = rlx.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %1 : tensor<f32>
}
