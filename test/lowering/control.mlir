// Lowering of the control family (scan, if, while, custom_fn, scan_backward[_xs]):
// rlx regions become scf loops and branches on tensors, and on to LLVM.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM
// RUN: rlx-opt %s --autodiff --lower-to-linalg | FileCheck %s --check-prefix=GRAD
// RUN: rlx-opt %s --autodiff --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM

// NORLX-NOT: {{= rlx\.}}
// NORLX-NOT: rlx.yield
// LLVM-NOT: scf.
// LLVM-NOT: linalg.
// LLVM-LABEL: llvm.func @scan_xs_bcast
// LLVM-LABEL: llvm.func @loss

// A scan with a broadcast input and per-step inputs: one scf.for over the steps, the
// carry an iter_arg, x[t] a rank-reducing tensor.extract_slice at the loop index.
// CHECK-LABEL: func.func @scan_xs_bcast
// CHECK: %[[C:[a-z0-9_]+]] = scf.for %[[T:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[CARRY:[a-z0-9_]+]] = %init) -> (tensor<3xf32>) {
// CHECK: tensor.extract_slice %xs[%[[T]], 0] [1, 3] [1, 1] : tensor<4x3xf32> to tensor<3xf32>
// CHECK: ins(%[[CARRY]], %w : tensor<3xf32>, tensor<3xf32>)
// CHECK: arith.constant -7.90531111 : f32
// CHECK: %[[NEXT:[a-z0-9_]+]] = bufferization.materialize_in_destination %{{.*}} in %[[CARRY]]
// CHECK: scf.yield %[[NEXT]] : tensor<3xf32>
// CHECK: func.return %[[C]] : tensor<3xf32>
func.func @scan_xs_bcast(%init: tensor<3xf32>, %w: tensor<3xf32>, %xs: tensor<4x3xf32>) -> tensor<3xf32> {
  %c = rlx.scan %init, %w, %xs {length = 4 : i64, num_xs = 1 : i64} : (tensor<3xf32>, tensor<3xf32>, tensor<4x3xf32>) -> tensor<3xf32> ({
  ^bb0(%carry: tensor<3xf32>, %wt: tensor<3xf32>, %x: tensor<3xf32>):
    %m = rlx.mul %carry, %wt : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %a = rlx.add %m, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %n = rlx.tanh %a : (tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %n : (tensor<3xf32>) -> ()
  })
  func.return %c : tensor<3xf32>
}

// A 2-checkpoint trajectory of 6 steps: steps 2 and 5 are stored, in rows
// floor(t * 2 / 6) when floor((t + 1) * 2 / 6) != floor(t * 2 / 6).
// CHECK-LABEL: func.func @scan_checkpointed
// CHECK: %[[TRAJ0:[a-z0-9_]+]] = bufferization.alloc_tensor() : tensor<2x3xf64>
// CHECK: %{{.*}}, %[[TRAJ:[a-z0-9_]+]] = scf.for %[[T:[a-z0-9_]+]] = {{.*}} iter_args(%{{.*}} = %init, %[[ROWS:[a-z0-9_]+]] = %[[TRAJ0]]) -> (tensor<3xf64>, tensor<2x3xf64>) {
// CHECK: math.sin
// CHECK: %[[ROW:[a-z0-9_]+]] = arith.divui
// CHECK: %[[STORED:[a-z0-9_]+]] = arith.cmpi ne
// CHECK: scf.if %[[STORED]] -> (tensor<2x3xf64>) {
// CHECK-NEXT: tensor.insert_slice %{{.*}} into %[[ROWS]][%[[ROW]], 0] [1, 3] [1, 1] : tensor<3xf64> into tensor<2x3xf64>
// CHECK: } else {
// CHECK-NEXT: scf.yield %[[ROWS]] : tensor<2x3xf64>
// CHECK: func.return %[[TRAJ]] : tensor<2x3xf64>
func.func @scan_checkpointed(%init: tensor<3xf64>) -> tensor<2x3xf64> {
  %c = rlx.scan %init {length = 6 : i64, save_trajectory = true, num_checkpoints = 2 : i64} : (tensor<3xf64>) -> tensor<2x3xf64> ({
  ^bb0(%carry: tensor<3xf64>):
    %n = rlx.sin %carry : (tensor<3xf64>) -> tensor<3xf64>
    rlx.yield %n : (tensor<3xf64>) -> ()
  })
  func.return %c : tensor<2x3xf64>
}

// rlx.if: scf.if on the predicate's element, each branch inlined.
// CHECK-LABEL: func.func @branch
// CHECK: %[[P:[a-z0-9_]+]] = tensor.extract %p[%{{.*}}] : tensor<1xi1>
// CHECK: %[[R:[a-z0-9_]+]], %[[Z:[a-z0-9_]+]] = scf.if %[[P]] -> (tensor<3xf32>, tensor<3xi1>) {
// CHECK: arith.constant -7.90531111 : f32
// CHECK: arith.cmpf olt
// CHECK: } else {
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.cmpf oge
// CHECK: func.return %[[R]], %[[Z]]
func.func @branch(%p: tensor<1xi1>, %x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xi1>) {
  %r:2 = rlx.if %p, %x : (tensor<1xi1>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xi1>) ({
  ^bb0(%a: tensor<3xf32>):
    %t = rlx.tanh %a : (tensor<3xf32>) -> tensor<3xf32>
    %z = rlx.compare %a, %t {predicate = "lt"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    rlx.yield %t, %z : (tensor<3xf32>, tensor<3xi1>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>):
    %e = rlx.exp %a : (tensor<3xf32>) -> tensor<3xf32>
    %z = rlx.compare %a, %e {predicate = "ge"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    rlx.yield %e, %z : (tensor<3xf32>, tensor<3xi1>) -> ()
  })
  func.return %r#0, %r#1 : tensor<3xf32>, tensor<3xi1>
}

// rlx.while with max_iterations: a step counter joins the scf.while state.
// CHECK-LABEL: func.func @bounded_loop
// CHECK: %[[ZERO:[a-z0-9_]+]] = arith.constant 0 : index
// CHECK: %[[R:[a-z0-9_]+]], %{{.*}} = scf.while (%[[S:[a-z0-9_]+]] = %x, %[[N:[a-z0-9_]+]] = %[[ZERO]]) : (tensor<f32>, index) -> (tensor<f32>, index) {
// CHECK: %[[LT:[a-z0-9_]+]] = tensor.extract %{{.*}}[] : tensor<i1>
// CHECK: %[[BOUND:[a-z0-9_]+]] = arith.constant 6 : index
// CHECK: %[[IN:[a-z0-9_]+]] = arith.cmpi slt, %[[N]], %[[BOUND]] : index
// CHECK: %[[GO:[a-z0-9_]+]] = arith.andi %[[LT]], %[[IN]] : i1
// CHECK: scf.condition(%[[GO]]) %[[S]], %[[N]] : tensor<f32>, index
// CHECK: } do {
// CHECK: arith.mulf
// CHECK: arith.addi
// CHECK: scf.yield
// CHECK: func.return %[[R]] : tensor<f32>
func.func @bounded_loop(%x: tensor<f32>) -> tensor<f32> {
  %r = rlx.while %x {max_iterations = 6 : i64} : (tensor<f32>) -> tensor<f32> ({
  ^bb0(%s: tensor<f32>):
    %five = rlx.constant {value = dense<5.0> : tensor<f32>} : () -> tensor<f32>
    %lt = rlx.compare %s, %five {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    rlx.yield %lt : (tensor<i1>) -> ()
  }, {
  ^bb0(%s: tensor<f32>):
    %k = rlx.constant {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>
    %n = rlx.mul %s, %k : (tensor<f32>, tensor<f32>) -> tensor<f32>
    rlx.yield %n : (tensor<f32>) -> ()
  })
  func.return %r : tensor<f32>
}

// Without max_iterations the state is just the tensor.
// CHECK-LABEL: func.func @unbounded_loop
// CHECK: scf.while (%{{.*}} = %x) : (tensor<2xi64>) -> tensor<2xi64> {
// CHECK: scf.condition
// CHECK: arith.addi
func.func @unbounded_loop(%x: tensor<2xi64>) -> tensor<2xi64> {
  %r = rlx.while %x : (tensor<2xi64>) -> tensor<2xi64> ({
  ^bb0(%s: tensor<2xi64>):
    %lim = rlx.constant {value = dense<100> : tensor<i64>} : () -> tensor<i64>
    %lt = rlx.compare %s, %lim {predicate = "lt"} : (tensor<2xi64>, tensor<i64>) -> tensor<2xi1>
    %first = rlx.narrow %lt {axis = 0 : i64, start = 0 : i64, length = 1 : i64} : (tensor<2xi1>) -> tensor<1xi1>
    rlx.yield %first : (tensor<1xi1>) -> ()
  }, {
  ^bb0(%s: tensor<2xi64>):
    %n = rlx.add %s, %s : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    rlx.yield %n : (tensor<2xi64>) -> ()
  })
  func.return %r : tensor<2xi64>
}

// rlx.custom_fn: the fwd body inlined; the vjp region is for autodiff only.
// CHECK-LABEL: func.func @custom
// CHECK-NOT: scf.
// CHECK: arith.mulf
// CHECK-NOT: arith.addf
// CHECK: func.return
func.func @custom(%x: tensor<3xf32>) -> tensor<3xf32> {
  %y = rlx.custom_fn %x {has_vjp = true} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %s = rlx.mul %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %s : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %out: tensor<3xf32>, %g: tensor<3xf32>):
    %d = rlx.add %g, %g : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %d : (tensor<3xf32>) -> ()
  })
  func.return %y : tensor<3xf32>
}

// The forward scan saves its 2 checkpoints; one reverse sweep gives d x0 and d xs (the
// scan_backward and scan_backward_xs autodiff emits share it): it adds the upstream row
// at stored steps and recomputes the carry entering step t from its segment's anchor (x0
// or a checkpoint) with an inner scf.for.
// A checkpointed scan loss (the only function with rlx.param: --autodiff adds @loss_grad).
// GRAD-LABEL: func.func @loss_grad
// GRAD: %{{.*}}, %[[TRAJ:[a-z0-9_]+]] = scf.for {{.*}} -> (tensor<3xf64>, tensor<2x3xf64>)
// GRAD: %[[DX0:[a-z0-9_]+]], %[[DXS:[a-z0-9_]+]] = scf.for %[[I:[a-z0-9_]+]] = {{.*}} -> (tensor<3xf64>, tensor<6x3xf64>) {
// GRAD: %[[T:[a-z0-9_]+]] = arith.subi %{{.*}}, %[[I]] : index
// GRAD: scf.if %{{.*}} -> (tensor<3xf64>) {
// GRAD: scf.yield %x0 : tensor<3xf64>
// GRAD: } else {
// GRAD: tensor.extract_slice %[[TRAJ]][%{{.*}}, 0] [1, 3] [1, 1] : tensor<2x3xf64> to tensor<3xf64>
// GRAD: scf.for %[[S:[a-z0-9_]+]] = %{{.*}} to %[[T]] step
// GRAD: tensor.extract_slice %xs[%[[S]], 0]
// GRAD: math.tanh
// GRAD: tensor.extract_slice %xs[%[[T]], 0]
// GRAD: tensor.insert_slice %{{.*}} into %{{.*}}[%[[T]], 0] [1, 3] [1, 1] : tensor<3xf64> into tensor<6x3xf64>
// GRAD-NOT: scf.for
// GRAD: func.return %{{.*}}, %[[DX0]], %[[DXS]] : tensor<f64>, tensor<3xf64>, tensor<6x3xf64>
func.func @loss(%x0: tensor<3xf64> {rlx.name = "x0", rlx.param}, %xs: tensor<6x3xf64> {rlx.name = "xs", rlx.param}) -> tensor<f64> {
  %c = rlx.scan %x0, %xs {length = 6 : i64, num_xs = 1 : i64, num_checkpoints = 2 : i64} : (tensor<3xf64>, tensor<6x3xf64>) -> tensor<3xf64> ({
  ^bb0(%carry: tensor<3xf64>, %x: tensor<3xf64>):
    %a = rlx.add %carry, %x : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
    %n = rlx.tanh %a : (tensor<3xf64>) -> tensor<3xf64>
    rlx.yield %n : (tensor<3xf64>) -> ()
  })
  %sq = rlx.mul %c, %c : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %l = rlx.reduce_sum %sq {axes = array<i64: 0>} : (tensor<3xf64>) -> tensor<f64>
  func.return %l : tensor<f64>
}
