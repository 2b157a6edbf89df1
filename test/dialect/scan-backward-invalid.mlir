// RUN: rlx-opt %s --split-input-file --verify-diagnostics

func.func @too_many_broadcasts(%init: tensor<1xf64>, %traj: tensor<3x1xf64>, %w: tensor<1xf64>) -> tensor<1xf64> {
  // expected-error @below {{num_bcast = 2 but the op has 1 inputs after upstream}}
  %0 = rlx.scan_backward %init, %traj, %traj, %w {length = 3 : i64, num_bcast = 2 : i64} : (tensor<1xf64>, tensor<3x1xf64>, tensor<3x1xf64>, tensor<1xf64>) -> tensor<1xf64> ({
  ^bb0(%c: tensor<1xf64>, %v: tensor<1xf64>, %g: tensor<1xf64>):
    rlx.yield %g, %g : (tensor<1xf64>, tensor<1xf64>) -> ()
  })
  func.return %0 : tensor<1xf64>
}

// -----

// A broadcast input reaches body_vjp whole: [2] here, not a row of it.
func.func @broadcast_is_not_sliced(%init: tensor<1xf64>, %traj: tensor<3x1xf64>, %w: tensor<2xf64>) -> tensor<2xf64> {
  // expected-error @below {{body_vjp takes (tensor<1xf64>, tensor<f64>, tensor<1xf64>) but must take (tensor<1xf64>, tensor<2xf64>, tensor<1xf64>)}}
  %0 = rlx.scan_backward_xs %init, %traj, %traj, %w {xs_idx = 0 : i64, length = 3 : i64, num_bcast = 1 : i64} : (tensor<1xf64>, tensor<3x1xf64>, tensor<3x1xf64>, tensor<2xf64>) -> tensor<2xf64> ({
  ^bb0(%c: tensor<1xf64>, %v: tensor<f64>, %g: tensor<1xf64>):
    rlx.yield %g, %v : (tensor<1xf64>, tensor<f64>) -> ()
  })
  func.return %0 : tensor<2xf64>
}
