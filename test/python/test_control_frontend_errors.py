"""Bad input to rlx.scan / cond / while_loop / fori_loop: a clear RlxError located at
the user's line, never a wrong answer."""

from __future__ import annotations

import numpy as np
import pytest

import rlx_mlir as rlx
from rlx_mlir import RlxError

X = np.ones(3, np.float32)
XS = np.ones((4, 3), np.float32)

CASES = {
    "carry shape": (lambda x: rlx.scan(lambda c, x: (c.sum(), None), x, XS),
                    r"scan: f returned f32\[\] for the carry leaf init, which is f32\[3\]"),
    "carry dtype": (lambda x: rlx.scan(lambda c, x: (c > 0, None), x, XS),
                    r"scan: f returned i1\[3\] for the carry leaf init, which is f32\[3\]"),
    "carry structure": (lambda x: rlx.scan(lambda c, x: ((c, c), None), x, XS),
                        r"structure of init \(a single array\); got a tuple of 2"),
    "not a pair": (lambda x: rlx.scan(lambda c, x: c, x, XS),
                   r"f must return a pair \(carry, y\)"),
    "not callable": (lambda x: rlx.scan(3, x, XS), r"scan: f must be callable; got int 3"),
    "nothing to scan": (lambda x: rlx.scan(lambda c, x: (c, None), x),
                        r"give xs or length"),
    "length mismatch": (lambda x: rlx.scan(lambda c, x: (c, None), x, XS, length=5),
                        r"lengths disagree: xs has 4, length has 5"),
    "xs mismatch": (lambda x: rlx.scan(lambda c, x: (c, None), x, (XS, XS[:2])),
                    r"lengths disagree: xs\[0\] has 4, xs\[1\] has 2"),
    "0-d xs": (lambda x: rlx.scan(lambda c, x: (c, None), x, np.float32(1)),
               r"xs is 0-d"),
    "checkpoints with ys": (lambda x: rlx.scan(lambda c, x: (c, c * 2.0), x, XS,
                                               num_checkpoints=2),
                            r"num_checkpoints=2 needs f to return no per-step outputs"),
    "checkpoints range": (lambda x: rlx.scan(lambda c, x: (c, None), x, XS, num_checkpoints=9),
                          r"num_checkpoints must be an int in \[0, length = 4\]; got 9"),
    "bad init leaf": (lambda x: rlx.scan(lambda c, x: (c, None), (x, "a"), XS),
                      r"scan: init\[1\] is a str"),
    "bad output leaf": (lambda x: rlx.scan(lambda c, x: (c, "s"), x, XS),
                        r"the leaf y that f returned is a str"),
    "pred float": (lambda x: rlx.cond(x.sum(), lambda a: a, lambda a: a, x),
                   r"cond: pred must be a scalar boolean or integer; got f32\[\] \(compare it"),
    "pred vector": (lambda x: rlx.cond(x > 0, lambda a: a, lambda a: a, x),
                    r"cond: pred must be a scalar boolean or integer; got i1\[3\]"),
    "branch shapes": (lambda x: rlx.cond(x.sum() > 0, lambda a: a, lambda a: a.sum(), x),
                      r"at output true_fun returned f32\[3\] and false_fun f32\[\]"),
    "branch dtypes": (lambda x: rlx.cond(x.sum() > 0, lambda a: a, lambda a: a > 0, x),
                      r"true_fun returned f32\[3\] and false_fun i1\[3\]"),
    "branch structures": (lambda x: rlx.cond(x.sum() > 0, lambda a: (a, a), lambda a: [a, a], x),
                          r"same pytree structure; got a tuple of 2 and a list of 2"),
    "branch not callable": (lambda x: rlx.cond(x.sum() > 0, lambda a: a, None, x),
                            r"cond: false_fun must be callable"),
    "loop predicate": (lambda x: rlx.while_loop(lambda s: s.sum(), lambda s: s, x),
                       r"while_loop: cond_fun must return a scalar boolean; got f32\[\]"),
    "loop body": (lambda x: rlx.while_loop(lambda s: s.sum() > 0, lambda s: s[:2], x),
                  r"body_fun returned f32\[2\] for the carry leaf init_val, which is f32\[3\]"),
    "loop bound": (lambda x: rlx.while_loop(lambda s: s.sum() > 0, lambda s: s, x,
                                            max_iterations=-1),
                   r"max_iterations must be None or an int >= 0; got -1"),
    "fori bound": (lambda x: rlx.fori_loop(0, 2.5, lambda i, c: c, x),
                   r"fori_loop: upper must be an int or an integer scalar tensor; got 2.5"),
    "fori body": (lambda x: rlx.fori_loop(0, 3, lambda i, c: c.sum(), x),
                  r"fori_loop: body_fun returned f32\[\] for the carry leaf init_val"),
    "fori traced float bound": (lambda x: rlx.fori_loop(0, x.sum(), lambda i, c: c, x),
                                r"traced bounds must be integer scalars"),
    "fori checkpoints": (lambda x: rlx.fori_loop(0, (x.sum() > 0).astype("i32") + 2,
                                                 lambda i, c: c, x, num_checkpoints=1),
                         r"num_checkpoints needs int bounds"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_is_a_located_error(name):
    fn, message = CASES[name]
    with pytest.raises(RlxError, match=message) as info:
        rlx.jit(fn)(X)
    assert str(info.value).startswith(f"{__file__}:"), str(info.value)


def test_a_body_tensor_that_escapes_is_an_error():
    leaked = []

    def fn(x):
        rlx.scan(lambda c, x: (leaked.append(c) or c, None), x, XS)
        return leaked[-1] * 2.0

    with pytest.raises(RlxError, match="used outside the trace it belongs to"):
        rlx.jit(fn)(X)


def test_a_body_using_a_tensor_of_a_finished_trace_is_an_error():
    stale = []
    rlx.jit(lambda x: stale.append(x) or x)(X)
    with pytest.raises(RlxError, match="used outside the trace it belongs to"):
        rlx.jit(lambda x: rlx.scan(lambda c, y: (c + stale[0], None), x, XS)[0])(X)
