// Native (JIT) results of the control family, checked against hand-computed values;
// the same CHECK lines hold for the interpreter.
// RUN: rlx-run %s --entry scans | FileCheck %s --check-prefix=SCANS
// RUN: rlx-run %s --entry scans --interpret | FileCheck %s --check-prefix=SCANS
// RUN: rlx-run %s --entry branches | FileCheck %s --check-prefix=IF
// RUN: rlx-run %s --entry branches --interpret | FileCheck %s --check-prefix=IF
// RUN: rlx-run %s --entry loops | FileCheck %s --check-prefix=WHILE
// RUN: rlx-run %s --entry loops --interpret | FileCheck %s --check-prefix=WHILE
// RUN: rlx-run %s --entry custom | FileCheck %s --check-prefix=CUSTOM
// RUN: rlx-run %s --entry backward | FileCheck %s --check-prefix=BWD
// RUN: rlx-run %s --entry backward --interpret | FileCheck %s --check-prefix=BWD
// RUN: rlx-run %s --entry backward_bcast | FileCheck %s --check-prefix=BCAST
// RUN: rlx-run %s --entry backward_bcast --interpret | FileCheck %s --check-prefix=BCAST

// c -> 2c from [1, 0.5]: every carry, then the 2-checkpoint rows (steps 1 and 3);
// a cumulative sum over xs from [0, 100].
// SCANS: result 0: tensor<4x2xf32>
// SCANS-NEXT: {{\[\[}} 2.000000,  1.000000],
// SCANS-NEXT: [ 4.000000,  2.000000],
// SCANS-NEXT: [ 8.000000,  4.000000],
// SCANS-NEXT: [16.000000,  8.000000]]
// SCANS: result 1: tensor<2x2xf32>
// SCANS-NEXT: {{\[\[}} 4.000000,  2.000000],
// SCANS-NEXT: [16.000000,  8.000000]]
// SCANS: result 2: tensor<2xf64>
// SCANS-NEXT: [  9.000000, 112.000000]
func.func @scans() -> (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf64>) {
  %x = rlx.constant {value = dense<[1.0, 0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %all = rlx.scan %x {length = 4 : i64, save_trajectory = true} : (tensor<2xf32>) -> tensor<4x2xf32> ({
  ^bb0(%c: tensor<2xf32>):
    %n = rlx.add %c, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    rlx.yield %n : (tensor<2xf32>) -> ()
  })
  %ckpt = rlx.scan %x {length = 4 : i64, save_trajectory = true, num_checkpoints = 2 : i64} : (tensor<2xf32>) -> tensor<2x2xf32> ({
  ^bb0(%c: tensor<2xf32>):
    %n = rlx.add %c, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    rlx.yield %n : (tensor<2xf32>) -> ()
  })
  %z = rlx.constant {value = dense<[0.0, 100.0]> : tensor<2xf64>} : () -> tensor<2xf64>
  %xs = rlx.constant {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf64>} : () -> tensor<3x2xf64>
  %sum = rlx.scan %z, %xs {length = 3 : i64, num_xs = 1 : i64} : (tensor<2xf64>, tensor<3x2xf64>) -> tensor<2xf64> ({
  ^bb0(%c: tensor<2xf64>, %u: tensor<2xf64>):
    %n = rlx.add %c, %u : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
    rlx.yield %n : (tensor<2xf64>) -> ()
  })
  func.return %all, %ckpt, %sum : tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf64>
}

// The same rlx.if region pair under a true and a false predicate: x * 10, or x - 1.
// IF: result 0: tensor<2xf32>
// IF-NEXT: [20.000000, -5.000000]
// IF: result 1: tensor<2xf32>
// IF-NEXT: [ 1.000000, -1.500000]
func.func @branches() -> (tensor<2xf32>, tensor<2xf32>) {
  %x = rlx.constant {value = dense<[2.0, -0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %yes = rlx.constant {value = dense<true> : tensor<1xi1>} : () -> tensor<1xi1>
  %no = rlx.constant {value = dense<false> : tensor<i1>} : () -> tensor<i1>
  %a = rlx.if %yes, %x : (tensor<1xi1>, tensor<2xf32>) -> tensor<2xf32> ({
  ^bb0(%v: tensor<2xf32>):
    %k = rlx.constant {value = dense<10.0> : tensor<f32>} : () -> tensor<f32>
    %r = rlx.mul %v, %k : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    rlx.yield %r : (tensor<2xf32>) -> ()
  }, {
  ^bb0(%v: tensor<2xf32>):
    %k = rlx.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %r = rlx.sub %v, %k : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    rlx.yield %r : (tensor<2xf32>) -> ()
  })
  %b = rlx.if %no, %x : (tensor<i1>, tensor<2xf32>) -> tensor<2xf32> ({
  ^bb0(%v: tensor<2xf32>):
    %k = rlx.constant {value = dense<10.0> : tensor<f32>} : () -> tensor<f32>
    %r = rlx.mul %v, %k : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    rlx.yield %r : (tensor<2xf32>) -> ()
  }, {
  ^bb0(%v: tensor<2xf32>):
    %k = rlx.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %r = rlx.sub %v, %k : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
    rlx.yield %r : (tensor<2xf32>) -> ()
  })
  func.return %a, %b : tensor<2xf32>, tensor<2xf32>
}

// while s < 5: s = 2s from 0.75: exits early at 6 (3 steps); max_iterations = 2 cuts
// it at 3; from 7 the body never runs.
// WHILE: result 0: tensor<f32>
// WHILE-NEXT: 6.000000
// WHILE: result 1: tensor<f32>
// WHILE-NEXT: 3.000000
// WHILE: result 2: tensor<f32>
// WHILE-NEXT: 7.000000
func.func @loops() -> (tensor<f32>, tensor<f32>, tensor<f32>) {
  %x = rlx.constant {value = dense<0.75> : tensor<f32>} : () -> tensor<f32>
  %big = rlx.constant {value = dense<7.0> : tensor<f32>} : () -> tensor<f32>
  %a = rlx.while %x {max_iterations = 10 : i64} : (tensor<f32>) -> tensor<f32> ({
  ^bb0(%s: tensor<f32>):
    %five = rlx.constant {value = dense<5.0> : tensor<f32>} : () -> tensor<f32>
    %lt = rlx.compare %s, %five {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    rlx.yield %lt : (tensor<i1>) -> ()
  }, {
  ^bb0(%s: tensor<f32>):
    %n = rlx.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
    rlx.yield %n : (tensor<f32>) -> ()
  })
  %b = rlx.while %x {max_iterations = 2 : i64} : (tensor<f32>) -> tensor<f32> ({
  ^bb0(%s: tensor<f32>):
    %five = rlx.constant {value = dense<5.0> : tensor<f32>} : () -> tensor<f32>
    %lt = rlx.compare %s, %five {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    rlx.yield %lt : (tensor<i1>) -> ()
  }, {
  ^bb0(%s: tensor<f32>):
    %n = rlx.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
    rlx.yield %n : (tensor<f32>) -> ()
  })
  %c = rlx.while %big : (tensor<f32>) -> tensor<f32> ({
  ^bb0(%s: tensor<f32>):
    %five = rlx.constant {value = dense<5.0> : tensor<f32>} : () -> tensor<f32>
    %lt = rlx.compare %s, %five {predicate = "lt"} : (tensor<f32>, tensor<f32>) -> tensor<i1>
    rlx.yield %lt : (tensor<i1>) -> ()
  }, {
  ^bb0(%s: tensor<f32>):
    %n = rlx.add %s, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
    rlx.yield %n : (tensor<f32>) -> ()
  })
  func.return %a, %b, %c : tensor<f32>, tensor<f32>, tensor<f32>
}

// custom_fn runs its fwd body: x * x.
// CUSTOM: result 0: tensor<3xf32>
// CUSTOM-NEXT: [1.000000, 4.000000, 9.000000]
func.func @custom() -> tensor<3xf32> {
  %x = rlx.constant {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %y = rlx.custom_fn %x {has_vjp = true} : (tensor<3xf32>) -> tensor<3xf32> ({
  ^bb0(%a: tensor<3xf32>):
    %s = rlx.mul %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %s : (tensor<3xf32>) -> ()
  }, {
  ^bb0(%a: tensor<3xf32>, %out: tensor<3xf32>, %g: tensor<3xf32>):
    %d = rlx.add %g, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    rlx.yield %d : (tensor<3xf32>) -> ()
  })
  func.return %y : tensor<3xf32>
}

// The backward of c' = c * x over xs = [2, 3, 4] from c = 1 (carries 2, 6, 24), keeping
// only the final carry (K = 1): the carries entering steps 2 and 1 are recomputed.
// With upstream 1 on the last row: d init = 2 * 3 * 4 = 24, d xs = [12, 8, 6].
// Every carry stored (K = 0), c' = 2c with upstream 1 on every row: d init = 2 + 4 + 8.
// BWD: result 0: tensor<1xf64>
// BWD-NEXT: [24.000000]
// BWD: result 1: tensor<3x1xf64>
// BWD-NEXT: {{\[\[}}12.000000],
// BWD-NEXT: [ 8.000000],
// BWD-NEXT: [ 6.000000]]
// BWD: result 2: tensor<1xf64>
// BWD-NEXT: [14.000000]
func.func @backward() -> (tensor<1xf64>, tensor<3x1xf64>, tensor<1xf64>) {
  %init = rlx.constant {value = dense<1.0> : tensor<1xf64>} : () -> tensor<1xf64>
  %xs = rlx.constant {value = dense<[[2.0], [3.0], [4.0]]> : tensor<3x1xf64>} : () -> tensor<3x1xf64>
  %traj = rlx.constant {value = dense<[[24.0]]> : tensor<1x1xf64>} : () -> tensor<1x1xf64>
  %up = rlx.constant {value = dense<[[1.0]]> : tensor<1x1xf64>} : () -> tensor<1x1xf64>
  %dinit = rlx.scan_backward %init, %traj, %up, %xs {length = 3 : i64, num_checkpoints = 1 : i64} : (tensor<1xf64>, tensor<1x1xf64>, tensor<1x1xf64>, tensor<3x1xf64>) -> tensor<1xf64> ({
  ^bb0(%c: tensor<1xf64>, %x: tensor<1xf64>, %g: tensor<1xf64>):
    %dc = rlx.mul %g, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dx = rlx.mul %g, %c : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %dc, %dx : (tensor<1xf64>, tensor<1xf64>) -> ()
  }, {
  ^bb0(%c: tensor<1xf64>, %x: tensor<1xf64>):
    %n = rlx.mul %c, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %n : (tensor<1xf64>) -> ()
  })
  %dxs = rlx.scan_backward_xs %init, %traj, %up, %xs {xs_idx = 0 : i64, length = 3 : i64, num_checkpoints = 1 : i64} : (tensor<1xf64>, tensor<1x1xf64>, tensor<1x1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64> ({
  ^bb0(%c: tensor<1xf64>, %x: tensor<1xf64>, %g: tensor<1xf64>):
    %dc = rlx.mul %g, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dx = rlx.mul %g, %c : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %dc, %dx : (tensor<1xf64>, tensor<1xf64>) -> ()
  }, {
  ^bb0(%c: tensor<1xf64>, %x: tensor<1xf64>):
    %n = rlx.mul %c, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %n : (tensor<1xf64>) -> ()
  })
  %traj3 = rlx.constant {value = dense<[[2.0], [4.0], [8.0]]> : tensor<3x1xf64>} : () -> tensor<3x1xf64>
  %ones = rlx.constant {value = dense<1.0> : tensor<3x1xf64>} : () -> tensor<3x1xf64>
  %dall = rlx.scan_backward %init, %traj3, %ones {length = 3 : i64} : (tensor<1xf64>, tensor<3x1xf64>, tensor<3x1xf64>) -> tensor<1xf64> ({
  ^bb0(%c: tensor<1xf64>, %g: tensor<1xf64>):
    %dc = rlx.add %g, %g : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %dc : (tensor<1xf64>) -> ()
  })
  func.return %dinit, %dxs, %dall : tensor<1xf64>, tensor<3x1xf64>, tensor<1xf64>
}

// A broadcast input: c' = c * w * x_t with w = 0.5 the same every step (num_bcast = 1),
// xs = [2, 3, 4], c = 1, K = 1 (the final carry 3 stored). With upstream 1: d init =
// w^3 * 24 = 3; d w, summed over the steps, = 3 w^2 * 24 = 18; d xs = 3 / xs.
// BCAST: result 0: tensor<1xf64>
// BCAST-NEXT: [3.000000]
// BCAST: result 1: tensor<1xf64>
// BCAST-NEXT: [18.000000]
// BCAST: result 2: tensor<3x1xf64>
// BCAST-NEXT: {{\[\[}}1.500000],
// BCAST-NEXT: [1.000000],
// BCAST-NEXT: [0.750000]]
func.func @backward_bcast() -> (tensor<1xf64>, tensor<1xf64>, tensor<3x1xf64>) {
  %init = rlx.constant {value = dense<1.0> : tensor<1xf64>} : () -> tensor<1xf64>
  %w = rlx.constant {value = dense<0.5> : tensor<1xf64>} : () -> tensor<1xf64>
  %xs = rlx.constant {value = dense<[[2.0], [3.0], [4.0]]> : tensor<3x1xf64>} : () -> tensor<3x1xf64>
  %traj = rlx.constant {value = dense<[[3.0]]> : tensor<1x1xf64>} : () -> tensor<1x1xf64>
  %up = rlx.constant {value = dense<[[1.0]]> : tensor<1x1xf64>} : () -> tensor<1x1xf64>
  %dinit = rlx.scan_backward %init, %traj, %up, %w, %xs {length = 3 : i64, num_checkpoints = 1 : i64, num_bcast = 1 : i64} : (tensor<1xf64>, tensor<1x1xf64>, tensor<1x1xf64>, tensor<1xf64>, tensor<3x1xf64>) -> tensor<1xf64> ({
  ^bb0(%c: tensor<1xf64>, %v: tensor<1xf64>, %x: tensor<1xf64>, %g: tensor<1xf64>):
    %gw = rlx.mul %g, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %gc = rlx.mul %g, %c : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dc = rlx.mul %gw, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dw = rlx.mul %gc, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dx = rlx.mul %gc, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %dc, %dw, %dx : (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) -> ()
  }, {
  ^bb0(%c: tensor<1xf64>, %v: tensor<1xf64>, %x: tensor<1xf64>):
    %cw = rlx.mul %c, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %n = rlx.mul %cw, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %n : (tensor<1xf64>) -> ()
  })
  %dwsum = rlx.scan_backward_xs %init, %traj, %up, %w, %xs {xs_idx = 0 : i64, length = 3 : i64, num_checkpoints = 1 : i64, num_bcast = 1 : i64} : (tensor<1xf64>, tensor<1x1xf64>, tensor<1x1xf64>, tensor<1xf64>, tensor<3x1xf64>) -> tensor<1xf64> ({
  ^bb0(%c: tensor<1xf64>, %v: tensor<1xf64>, %x: tensor<1xf64>, %g: tensor<1xf64>):
    %gw = rlx.mul %g, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %gc = rlx.mul %g, %c : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dc = rlx.mul %gw, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dw = rlx.mul %gc, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dx = rlx.mul %gc, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %dc, %dw, %dx : (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) -> ()
  }, {
  ^bb0(%c: tensor<1xf64>, %v: tensor<1xf64>, %x: tensor<1xf64>):
    %cw = rlx.mul %c, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %n = rlx.mul %cw, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %n : (tensor<1xf64>) -> ()
  })
  %dxs = rlx.scan_backward_xs %init, %traj, %up, %w, %xs {xs_idx = 1 : i64, length = 3 : i64, num_checkpoints = 1 : i64, num_bcast = 1 : i64} : (tensor<1xf64>, tensor<1x1xf64>, tensor<1x1xf64>, tensor<1xf64>, tensor<3x1xf64>) -> tensor<3x1xf64> ({
  ^bb0(%c: tensor<1xf64>, %v: tensor<1xf64>, %x: tensor<1xf64>, %g: tensor<1xf64>):
    %gw = rlx.mul %g, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %gc = rlx.mul %g, %c : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dc = rlx.mul %gw, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dw = rlx.mul %gc, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %dx = rlx.mul %gc, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %dc, %dw, %dx : (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) -> ()
  }, {
  ^bb0(%c: tensor<1xf64>, %v: tensor<1xf64>, %x: tensor<1xf64>):
    %cw = rlx.mul %c, %v : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    %n = rlx.mul %cw, %x : (tensor<1xf64>, tensor<1xf64>) -> tensor<1xf64>
    rlx.yield %n : (tensor<1xf64>) -> ()
  })
  func.return %dinit, %dwsum, %dxs : tensor<1xf64>, tensor<1xf64>, tensor<3x1xf64>
}
