"""``rlx.einsum`` and ``rlx.tensordot``: numpy's contractions on traced tensors.

They emit no op of their own: each pair of operands becomes transposes, reshapes and one
(batched) ``rlx.matmul`` (an outer product a broadcasting multiply), with labels summed
away first by ``rlx.reduce_sum`` and repeated labels (diagonals) read through an identity
mask, so gradients, jvp, vmap and the matmul schedules apply unchanged.

>>> scores = rlx.einsum("bqhd,bkhd->bhqk", q, k)              # doctest: +SKIP
"""

from __future__ import annotations

import math
import string
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rlx_mlir.builder import Builder, Tensor, _user_location, innermost
from rlx_mlir.diagnostics import RlxError, loc_from_attr

_LETTERS = set(string.ascii_letters)


def _error(message: str) -> RlxError:
    return RlxError(message, loc=loc_from_attr(_user_location()))


def _shown(label: str) -> str:
    """A label for messages: the stand-ins of ``...`` axes as ``'...'``."""
    return "'...'" if ord(label) >= 0x100 else repr(label)


@dataclass
class Term:
    """A tensor and the label of each of its axes."""

    tensor: Tensor
    labels: str

    def sizes(self) -> dict[str, int]:
        return dict(zip(self.labels, self.tensor.shape, strict=True))


# ---------------------------------------------------------------- parsing


def _ellipsis_labels(count: int) -> str:
    """Stand-in labels for ``...`` axes: characters no subscript can use."""
    return "".join(chr(0x100 + i) for i in range(count))


def _expand_ellipsis(spec: str, rank: int | None, width: int, what: str) -> str:
    """``spec`` with ``...`` replaced by the last ``rank - letters`` of ``width`` stand-ins
    (``rank`` None: the output, which takes all ``width``)."""
    if spec.count("...") > 1 or "." in spec.replace("...", ""):
        raise _error(f"einsum: {what} '{spec}' has a malformed ellipsis")
    bad = set(spec.replace("...", "")) - _LETTERS
    if bad:
        raise _error(f"einsum: {what} '{spec}' has invalid subscript {sorted(bad)[0]!r} "
                     "(labels are letters a-z, A-Z)")
    letters = len(spec.replace("...", ""))
    if "..." not in spec:
        if rank is not None and letters != rank:
            raise _error(f"einsum: {what} '{spec}' has {letters} labels for a tensor of rank "
                         f"{rank}")
        return spec
    count = width if rank is None else rank - letters
    if count < 0:
        raise _error(f"einsum: {what} '{spec}' has {letters} labels for a tensor of rank {rank}")
    return spec.replace("...", _ellipsis_labels(width)[width - count:])


def parse(subscripts: str, ranks: Sequence[int]) -> tuple[list[str], str]:
    """Each operand's labels and the output's (numpy's rules: without ``->`` the output is
    the broadcast ``...`` axes, then the labels used once, in alphabetical order).

    >>> parse("ij,jk", [2, 2])
    (['ij', 'jk'], 'ik')
    """
    if not isinstance(subscripts, str):
        raise _error(f"einsum: subscripts must be a str, got {type(subscripts).__name__}")
    spec = subscripts.replace(" ", "")
    inputs, arrow, output = spec.partition("->")
    parts = inputs.split(",")
    if len(parts) != len(ranks):
        raise _error(f"einsum: '{subscripts}' names {len(parts)} operands, got {len(ranks)}")
    width = max([rank - len(p.replace("...", "")) for p, rank in zip(parts, ranks, strict=True)
                 if "..." in p] or [0])
    labels = [_expand_ellipsis(p, rank, width, f"operand {i}")
              for i, (p, rank) in enumerate(zip(parts, ranks, strict=True))]
    if arrow:
        out = _expand_ellipsis(output, None, width, "output")
        if len(set(out)) != len(out):
            raise _error(f"einsum: output '{output}' repeats a label")
        unknown = set(out) - set("".join(labels))
        if unknown:
            raise _error(f"einsum: output label {sorted(unknown)[0]!r} is in no operand")
        return labels, out
    counts = {c: "".join(labels).count(c) for c in "".join(labels)}
    once = sorted(c for c, n in counts.items() if n == 1 and c in _LETTERS)
    return labels, _ellipsis_labels(width) + "".join(once)


# ---------------------------------------------------------------- single operands


def _diagonal(b: Builder, term: Term) -> Term:
    """A label repeated inside one operand (``ii``) keeps the diagonal: the tensor where an
    identity mask over the two axes is true, zero elsewhere (an inf off the diagonal stays
    out), summed over the second."""
    labels = term.labels
    for i, label in enumerate(labels):
        j = labels.find(label, i + 1)
        if j < 0:
            continue
        n, m = term.tensor.shape[i], term.tensor.shape[j]
        if n != m:
            raise _error(f"einsum: label {_shown(label)} has sizes {n} and {m} in one operand")
        shape = [1] * len(labels)
        shape[i] = shape[j] = n
        from rlx_mlir.nn import where

        mask = b.constant(np.eye(n, dtype=bool).reshape(shape))
        kept = where(mask, term.tensor, False if term.tensor.dtype == "i1" else 0).sum(axis=j)
        return _diagonal(b, Term(kept, labels[:j] + labels[j + 1:]))
    return term


def _sum_out(term: Term, keep: set[str]) -> Term:
    """``term`` summed over its labels not in ``keep``."""
    axes = tuple(i for i, c in enumerate(term.labels) if c not in keep)
    if not axes:
        return term
    return Term(term.tensor.sum(axis=axes),
                "".join(c for c in term.labels if c in keep))


def _transposed(term: Term, order: str) -> Tensor:
    if term.labels == order:
        return term.tensor
    return term.tensor.transpose(tuple(term.labels.index(c) for c in order))


# ---------------------------------------------------------------- pairs


def _check_sizes(a: Term, b: Term) -> dict[str, int]:
    """The size of each label, size-1 axes broadcasting (numpy allows it for ``...``)."""
    sizes = a.sizes()
    for label, n in b.sizes().items():
        m = sizes.get(label, n)
        if n != m and 1 not in (n, m):
            raise _error(f"einsum: label {_shown(label)} has sizes {m} and {n}")
        sizes[label] = max(n, m)
    return sizes


def _broadcast_shared(a: Term, b: Term) -> tuple[Term, Term]:
    """Shared labels of size 1 in one operand and n in the other expanded to n."""
    sizes = _check_sizes(a, b)

    def expanded(t: Term) -> Term:
        target = tuple(sizes[c] if c in a.labels and c in b.labels else n
                       for c, n in zip(t.labels, t.tensor.shape, strict=True))
        if target == tuple(t.tensor.shape):
            return t
        return Term(t.tensor.builder.expand(t.tensor, target), t.labels)

    return expanded(a), expanded(b)


def _contract(a: Term, b: Term, keep: set[str]) -> Term:
    """``a`` and ``b`` multiplied and summed over their shared labels not in ``keep``: as
    ``[batch, free_a, K] @ [batch, K, free_b]``."""
    a, b = _broadcast_shared(a, b)
    shared = [c for c in a.labels if c in b.labels]
    batch = "".join(c for c in shared if c in keep)
    summed = "".join(c for c in shared if c not in keep)
    free_a = "".join(c for c in a.labels if c not in shared)
    free_b = "".join(c for c in b.labels if c not in shared)
    if not summed:  # an outer product: a broadcasting multiply
        x = _transposed(a, batch + free_a).reshape(
            (*_dims(a, batch + free_a), *[1] * len(free_b)))
        y = _transposed(b, batch + free_b).reshape(
            (*_dims(b, batch), *[1] * len(free_a), *_dims(b, free_b)))
        return Term(x * y, batch + free_a + free_b)
    lhs = _transposed(a, batch + free_a + summed).reshape(
        (*_dims(a, batch), math.prod(_dims(a, free_a)), math.prod(_dims(a, summed))))
    rhs = _transposed(b, batch + summed + free_b).reshape(
        (*_dims(b, batch), math.prod(_dims(b, summed)), math.prod(_dims(b, free_b))))
    product = lhs @ rhs
    return Term(product.reshape((*_dims(a, batch), *_dims(a, free_a), *_dims(b, free_b))),
                batch + free_a + free_b)


def _dims(term: Term, labels: str) -> tuple[int, ...]:
    sizes = term.sizes()
    return tuple(sizes[c] for c in labels)


def _operands(operands: Sequence[object], what: str = "einsum") -> list[Tensor]:
    """The operands as tensors of one trace (numpy arrays and numbers become constants;
    with no traced operand, of the innermost active trace)."""
    from rlx_mlir.dialects.base import is_real_float
    from rlx_mlir.frontend.tracing import _active

    tensors = [o for o in operands if isinstance(o, Tensor)]
    if not tensors and not _active():
        raise _error(f"{what}: no traced operand (call it inside rlx.jit, or on numpy "
                     "arrays outside any trace)")
    b = innermost(*tensors) if tensors else _active()[-1]
    out = []
    for i, o in enumerate(operands):
        if isinstance(o, Tensor):
            out.append(o)
            continue
        array = np.asarray(o)
        if array.dtype.kind not in "biufc" and not is_real_float(array.dtype):
            raise _error(f"{what}: operand {i} is {type(o).__name__} of {array.dtype}, not "
                         "an array of numbers")
        out.append(b.constant(array))
    return out


def einsum(subscripts: str, *operands: Tensor, optimize: object = None) -> Tensor:
    """numpy's ``einsum`` on tensors: ``"ij,jk->ik"``, implicit outputs, ``...``
    broadcasting and diagonals (``"ii->i"``). Operands contract left to right, each pair as
    one batched matmul (``optimize`` is accepted, as numpy's and JAX's, and ignored). Bool
    operands give numpy's bool result (any of the products).

    >>> rlx.einsum("bhqd,bhkd->bhqk", q, k)                    # doctest: +SKIP
    """
    tensors = _operands(operands)
    if tensors and all(t.dtype == "i1" for t in tensors):
        return _einsum(subscripts, [t.astype("i32") for t in tensors]) != 0
    return _einsum(subscripts, tensors)


def _einsum(subscripts: str, tensors: list[Tensor]) -> Tensor:
    labels, out = parse(subscripts, [t.ndim for t in tensors])
    b = innermost(*tensors)
    terms = [_diagonal(b, Term(t, s)) for t, s in zip(tensors, labels, strict=True)]
    result = terms[0]
    for i, term in enumerate(terms[1:], 1):
        later = set(out) | set("".join(t.labels for t in terms[i + 1:]))
        result = _sum_out(result, later | set(term.labels))
        term = _sum_out(term, later | set(result.labels))
        result = _contract(result, term, later)
    return _finish(_sum_out(result, set(out)), out, terms)


def _finish(result: Term, out: str, terms: list[Term]) -> Tensor:
    """``result`` in the output's label order, broadcast where a size-1 ``...`` axis met a
    longer one in another operand."""
    tensor = _transposed(result, out) if result.labels else result.tensor
    sizes: dict[str, int] = {}
    for term in terms:
        for label, n in term.sizes().items():
            sizes[label] = n if sizes.get(label, 1) == 1 else sizes[label]  # 1 broadcasts
    target = tuple(sizes[c] for c in out)
    if tuple(tensor.shape) != target:
        tensor = tensor.builder.expand(tensor, target)
    return tensor


def _labels(what: str, *ranks: int) -> list[list[str]]:
    """Distinct letters for the axes of each operand (52 in all at most)."""
    if sum(ranks) > len(string.ascii_letters):
        raise _error(f"{what}: at most {len(string.ascii_letters)} axes in all, got "
                     f"{sum(ranks)}")
    letters = iter(string.ascii_letters)
    return [[next(letters) for _ in range(rank)] for rank in ranks]


def tensordot(a: Tensor, b: Tensor, axes: int | Sequence = 2) -> Tensor:
    """numpy's ``tensordot``: sum over the last ``axes`` axes of ``a`` and the first of
    ``b``, or over the pairs ``axes = (a_axes, b_axes)``.

    >>> rlx.tensordot(x, w, axes=([1, 2], [0, 1]))              # doctest: +SKIP
    """
    a, b = _operands([a, b], "tensordot")
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        if not 0 <= axes <= min(a.ndim, b.ndim):
            raise _error(f"tensordot: axes={axes} is out of range for ranks {a.ndim}, {b.ndim}")
        pairs = (list(range(a.ndim - axes, a.ndim)), list(range(axes)))
    elif isinstance(axes, (list, tuple)) and len(axes) == 2:
        pairs = tuple([axes_] if isinstance(axes_, (int, np.integer)) else list(axes_)
                      for axes_ in axes)
    else:
        raise _error(f"tensordot: axes must be an int or a pair of axis lists, got {axes!r}")
    if not all(isinstance(axis, (int, np.integer)) and not isinstance(axis, bool)
               for axis in (*pairs[0], *pairs[1])):
        raise _error(f"tensordot: axes must be ints, got {axes!r}")
    if len(pairs[0]) != len(pairs[1]):
        raise _error(f"tensordot: {len(pairs[0])} axes of a against {len(pairs[1])} of b")
    for axes_, rank, what in ((pairs[0], a.ndim, "a"), (pairs[1], b.ndim, "b")):
        for axis in axes_:
            if not -rank <= axis < rank:
                raise _error(f"tensordot: axis {axis} is out of range for {what} of rank {rank}")
        if len({axis % rank for axis in axes_}) != len(axes_):
            raise _error(f"tensordot: duplicate axes {list(axes_)} of {what}")
    la, lb = _labels("tensordot", a.ndim, b.ndim)
    for i, j in zip(*pairs, strict=True):
        if a.shape[i] != b.shape[j]:
            raise _error(f"tensordot: axis {i % a.ndim} of a (size {a.shape[i]}) does not "
                         f"match axis {j % b.ndim} of b (size {b.shape[j]})")
        lb[j % b.ndim] = la[i % a.ndim]
    summed = {la[i % a.ndim] for i in pairs[0]}
    out = "".join(c for c in la if c not in summed) + "".join(c for c in lb if c not in summed)
    return einsum(f"{''.join(la)},{''.join(lb)}->{out}", a, b)


def dot_general(lhs: Tensor, rhs: Tensor, dimension_numbers: Sequence, precision: object = None,
                preferred_element_type: object = None) -> Tensor:
    """``jax.lax.dot_general``: ``dimension_numbers = ((lhs_contracting, rhs_contracting),
    (lhs_batch, rhs_batch))``; the result's axes are the batch axes, then lhs's free axes,
    then rhs's (XLA's order, SPEC 2.2.12). ``precision`` is accepted and ignored (f32
    products are always full f32); ``preferred_element_type`` is the dtype the operands are
    cast to, so the product is computed and returned in it.

    >>> rlx.dot_general(q, k, (((2,), (2,)), ((0,), (0,))))     # doctest: +SKIP
    """
    lhs, rhs = _operands([lhs, rhs], "dot_general")
    try:
        (lc, rc), (lb, rb) = dimension_numbers
        lc, rc, lb, rb = ([int(a) for a in axes] for axes in (lc, rc, lb, rb))
    except (TypeError, ValueError):
        raise _error("dot_general: dimension_numbers must be ((lhs_contracting, "
                     "rhs_contracting), (lhs_batch, rhs_batch)), got "
                     f"{dimension_numbers!r}") from None
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise _error(f"dot_general: {len(lc)}/{len(rc)} contracting and {len(lb)}/{len(rb)} "
                     "batch axes do not pair up")
    for axes, rank, what in ((lc + lb, lhs.ndim, "lhs"), (rc + rb, rhs.ndim, "rhs")):
        if any(not 0 <= a < rank for a in axes) or len(set(axes)) != len(axes):
            raise _error(f"dot_general: {what} axes {axes} are repeated or out of range for "
                         f"rank {rank}")
    left, right = _labels("dot_general", lhs.ndim, rhs.ndim)
    for i, j in zip(lc + lb, rc + rb, strict=True):
        if lhs.shape[i] != rhs.shape[j]:
            raise _error(f"dot_general: lhs axis {i} (size {lhs.shape[i]}) and rhs axis {j} "
                         f"(size {rhs.shape[j]}) differ")
        right[j] = left[i]
    batch = "".join(left[i] for i in lb)
    free_l = "".join(c for i, c in enumerate(left) if i not in lc + lb)
    free_r = "".join(c for j, c in enumerate(right) if j not in rc + rb)
    if preferred_element_type is not None:
        lhs, rhs = lhs.astype(preferred_element_type), rhs.astype(preferred_element_type)
    return einsum(f"{''.join(left)},{''.join(right)}->{batch}{free_l}{free_r}", lhs, rhs)
