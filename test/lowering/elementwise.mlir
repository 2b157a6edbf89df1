// Lowering of the elementwise family: rlx -> linalg on tensors, and on to LLVM.
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s
// RUN: rlx-opt %s --lower-to-linalg | FileCheck %s --check-prefix=NORLX
// RUN: rlx-opt %s --lower-to-llvm | mlir-opt | FileCheck %s --check-prefix=LLVM

// NORLX-NOT: {{= rlx\.}}
// LLVM-NOT: linalg.
// LLVM-NOT: memref.

// A broadcast add: the [8] bias reads only d1; the [4, 1] operand reads (d0, 0).
// CHECK-LABEL: func.func @broadcast_add
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%[[E]] : tensor<4x8xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>]
// CHECK: arith.subf
// LLVM-LABEL: llvm.func @broadcast_add
// LLVM-LABEL: llvm.func @_mlir_ciface_broadcast_add
// LLVM-SAME: llvm.emit_c_interface
func.func @broadcast_add(%x: tensor<4x8xf32> {rlx.name = "x"}, %b: tensor<8xf32>, %c: tensor<4x1xf32>) -> tensor<4x8xf32> {
  %0 = rlx.add %x, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = rlx.sub %0, %c : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  func.return %1 : tensor<4x8xf32>
}

// Rank-expanding broadcast of a [3, 1] into [2, 3, 4], integer ops.
// CHECK-LABEL: func.func @int_ops
// CHECK: affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK: arith.cmpi eq
// CHECK: arith.divsi
// CHECK: arith.select
// CHECK: math.ipowi
func.func @int_ops(%x: tensor<2x3x4xi32>, %y: tensor<3x1xi32>) -> (tensor<2x3x4xi32>, tensor<2x3x4xi32>) {
  %0 = rlx.div %x, %y : (tensor<2x3x4xi32>, tensor<3x1xi32>) -> tensor<2x3x4xi32>
  %1 = rlx.pow %x, %y : (tensor<2x3x4xi32>, tensor<3x1xi32>) -> tensor<2x3x4xi32>
  func.return %0, %1 : tensor<2x3x4xi32>, tensor<2x3x4xi32>
}

// Exact gelu uses erf (for f32 the emitter's rational approximation on [-4, 4]); round is
// half away from zero, exactly: trunc(x), plus copysign(1, x) where |x - trunc(x)| >= 0.5
// (math.round has no x86 instruction: LLVM called roundf per lane).
// CHECK-LABEL: func.func @activations
// CHECK: arith.constant -4.000000e+00 : f32
// CHECK: arith.constant -7.90531111 : f32
// CHECK: math.absf
// CHECK: %[[T:.*]] = math.trunc %[[X:[a-z0-9_]+]] : f32
// CHECK: %[[D:.*]] = arith.subf %[[X]], %[[T]] : f32
// CHECK: %[[A:.*]] = math.absf %[[D]] : f32
// CHECK: %[[AWAY:.*]] = arith.cmpf oge, %[[A]], %{{.*}} : f32
// CHECK: %[[ONE:.*]] = math.copysign %{{.*}}, %[[X]] : f32
// CHECK: %[[UP:.*]] = arith.addf %[[T]], %[[ONE]] : f32
// CHECK: arith.select %[[AWAY]], %[[UP]], %[[T]] : f32
// CHECK-NOT: math.round
// CHECK: arith.maximumf
// f32 erf and tanh are vectorized rational approximations: no libm call; their
// polynomials are evaluated one vector FMA per Horner step.
// LLVM-LABEL: llvm.func @activations
// LLVM-NOT: llvm.call @erff
// LLVM: %[[H1:.*]] = llvm.intr.fma({{.*}}) : (vector<5xf32>, vector<5xf32>, vector<5xf32>) -> vector<5xf32>
// LLVM-NEXT: llvm.intr.fma(%[[H1]], {{.*}}) : (vector<5xf32>, vector<5xf32>, vector<5xf32>) -> vector<5xf32>
// LLVM: llvm.fdiv {{.*}} : vector<5xf32>
func.func @activations(%x: tensor<5xf32>) -> (tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>) {
  %0 = rlx.gelu %x : (tensor<5xf32>) -> tensor<5xf32>
  %1 = rlx.gelu_approx %x : (tensor<5xf32>) -> tensor<5xf32>
  %2 = rlx.round %x : (tensor<5xf32>) -> tensor<5xf32>
  %3 = rlx.relu %x : (tensor<5xf32>) -> tensor<5xf32>
  func.return %0, %1, %2, %3 : tensor<5xf32>, tensor<5xf32>, tensor<5xf32>, tensor<5xf32>
}

// compare -> i1 (ordered lt; ne is unordered so NaN != 0 holds), where broadcasts all three.
// CHECK-LABEL: func.func @compare_where
// CHECK: arith.cmpf olt
// CHECK: -> tensor<3x4xi1>
// CHECK: affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> ()>
// CHECK: arith.select
func.func @compare_where(%a: tensor<3x4xf32>, %b: tensor<4xf32>, %s: tensor<f32>) -> tensor<3x4xf32> {
  %p = rlx.compare %a, %b {predicate = "lt"} : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xi1>
  %r = rlx.where %p, %b, %s : (tensor<3x4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<3x4xf32>
  func.return %r : tensor<3x4xf32>
}

// float -> int rounds half away from zero before fptosi; bool -> float is unsigned.
// CHECK-LABEL: func.func @casts
// CHECK: math.trunc
// CHECK: math.copysign
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.cmpf une
// CHECK: arith.uitofp %{{.*}} : i1 to f64
// CHECK: arith.extf %{{.*}} : f32 to f64
func.func @casts(%x: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf64>, tensor<4xf64>) {
  %0 = rlx.cast %x : (tensor<4xf32>) -> tensor<4xi32>
  %1 = rlx.cast %x : (tensor<4xf32>) -> tensor<4xi1>
  %2 = rlx.cast %1 : (tensor<4xi1>) -> tensor<4xf64>
  %3 = rlx.cast %x : (tensor<4xf32>) -> tensor<4xf64>
  func.return %0, %2, %3 : tensor<4xi32>, tensor<4xf64>, tensor<4xf64>
}

// constant -> arith.constant dense; stop_gradient disappears.
// CHECK-LABEL: func.func @constant_stop_gradient
// CHECK: arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
// CHECK-NOT: rlx.stop_gradient
// CHECK: func.return
func.func @constant_stop_gradient(%x: tensor<2xf32>) -> tensor<2xf32> {
  %c = rlx.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %s = rlx.stop_gradient %c : (tensor<2xf32>) -> tensor<2xf32>
  %r = rlx.mul %x, %s : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return %r : tensor<2xf32>
}
