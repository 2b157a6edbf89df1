// Two arguments of one name: binding either by name is an error (which one was meant is
// unknown), for --autodiff, --jvp and --vmap alike; a name listed twice too.
// RUN: not rlx-opt %s --autodiff=wrt=w 2>&1 | FileCheck %s --check-prefix=GRAD
// RUN: not rlx-opt %s --jvp=wrt=w 2>&1 | FileCheck %s --check-prefix=GRAD
// RUN: not rlx-opt %s "--vmap=batched=w size=2" 2>&1 | FileCheck %s --check-prefix=VMAP
// RUN: not rlx-opt %s "--vmap=batched=v,v size=2" 2>&1 | FileCheck %s --check-prefix=TWICE
// RUN: not rlx-opt %s --autodiff=wrt=v,v 2>&1 | FileCheck %s --check-prefix=WRT
// GRAD: argument-names.mlir:13:1: error: @f has 2 arguments named 'w': rename one to differentiate it by name
// VMAP: argument-names.mlir:13:1: error: @f has 2 arguments named 'w': rename one to batch it by name
// TWICE: error: batched names an argument twice: v, v
// WRT: error: wrt lists 'v' more than once

func.func @f(%x: tensor<3xf32> {rlx.name = "w"}, %w: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<f32> {
  %y = rlx.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %z = rlx.mul %y, %v : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %s = rlx.reduce_sum %z {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  func.return %s : tensor<f32>
}

