"""The derivative of ``np.einsum``.

``einsum`` takes any number of operands and any subscripts (explicit or
implicit output, ``...``, repeated indices such as ``ii->`` or ``ii->i``,
indices summed inside one operand, size-1 broadcasting): the cotangent of
operand k is an einsum of ``g`` with the other operands whose output is
operand k's subscripts; indices that einsum cannot output (repeated ones,
those present only in operand k) are put back by broadcasting and identity
masks.  The sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is turned
into the string form once (:func:`einsum_subscripts`), labels numbered as
NumPy numbers them.  Numba has no einsum: under ``jit=True`` it is refused.

Conventions are those of :mod:`pullback.rules.elementwise`; the helper takes
the operand number (``einsum_vjp(g, k, ...)``).
"""
from __future__ import annotations

from collections import Counter

import array_api_compat
import numpy as np

from . import results
from .elementwise import as_array, like_arg, namespace, unbroadcast
from .registry import defrule

__all__ = ["einsum_vjp", "einsum_subscripts", "parse_einsum"]


# ---------------------------------------------------------------------------
# einsum

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_fn(xp):
    """The backend's einsum (the array API standard has none)."""
    if array_api_compat.is_numpy_namespace(xp):
        return lambda expr, *ops: np.einsum(expr, *ops, optimize=len(ops) > 2)
    if array_api_compat.is_torch_namespace(xp):
        import torch
        return torch.einsum
    if array_api_compat.is_cupy_namespace(xp):
        import cupy
        return cupy.einsum
    if array_api_compat.is_jax_namespace(xp):
        import jax.numpy as jnp
        return jnp.einsum
    raise NotImplementedError(f"einsum derivative: no einsum known for namespace {xp.__name__}")


def parse_einsum(subscripts: str, ndims):
    """Explicit subscripts for ``einsum(subscripts, *operands)``: (inputs, output).

    ``...`` becomes letters that are otherwise unused (aligned on the right, as
    broadcasting aligns dimensions); an implicit output is made explicit
    (ellipsis dimensions first, then the indices that appear once, sorted).
    """
    s = subscripts.replace(" ", "")
    ins, arrow, out = s.partition("->")
    ins = ins.split(",")
    if len(ins) != len(ndims):
        raise ValueError(f"einsum: {len(ins)} operands in {subscripts!r}, {len(ndims)} given")
    used = {c for c in s if c.isalpha()}
    free = [c for c in _LETTERS if c not in used]
    widths = [nd - (len(t) - 3) for t, nd in zip(ins, ndims) if "..." in t]
    width = max(widths, default=0)
    ell = "".join(free[:width])
    ins = [t.replace("...", ell[width - (nd - (len(t) - 3)):]) if "..." in t else t
           for t, nd in zip(ins, ndims)]
    if arrow:
        out = out.replace("...", ell)
    else:
        counts = Counter("".join(ins))
        out = ell + "".join(sorted(c for c in counts if counts[c] == 1 and c not in ell))
    return ins, out


# NumPy numbers sublist labels 0..51 as the letters A..Z, a..z.
_SUBLIST_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _sublist_letters(labels) -> str:
    out = []
    for label in labels:
        if label is Ellipsis:
            out.append("...")
        elif 0 <= int(label) < len(_SUBLIST_LETTERS):
            out.append(_SUBLIST_LETTERS[int(label)])
        else:
            raise ValueError(f"einsum: sublist label {label!r} is not in [0, 52)")
    return "".join(out)


def einsum_subscripts(args):
    """``np.einsum(*args)`` in the string form: ``(subscripts, operands, positions)``
    where ``positions[j]`` is the place of operand j in ``args``.

    The sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` (operands and their
    label lists interleaved, an optional output list last) becomes
    ``("AB,BC->AC", [a, b], [0, 2])``; the string form is returned as it is.
    """
    if isinstance(args[0], str):
        return args[0], list(args[1:]), list(range(1, len(args)))
    pairs = len(args) // 2
    ins = [_sublist_letters(args[2 * j + 1]) for j in range(pairs)]
    subscripts = ",".join(ins)
    if len(args) % 2:
        subscripts += "->" + _sublist_letters(args[-1])
    return subscripts, [args[2 * j] for j in range(pairs)], [2 * j for j in range(pairs)]


def einsum_vjp(g, k, *args):
    """Cotangent of ``args[k]``, an operand of ``np.einsum(*args)`` (string or
    sublist form)."""
    subscripts, ops, positions = einsum_subscripts(args)
    k = positions.index(k)
    xp = namespace(g, *ops)
    arrs = [as_array(xp, o, g, *ops) for o in ops]
    ins, out = parse_einsum(subscripts, [o.ndim for o in arrs])
    target, op = ins[k], arrs[k]
    others = [t for j, t in enumerate(ins) if j != k]
    available = set(out).union(*others)
    unique = list(dict.fromkeys(target))            # first occurrences, in order
    kept = [c for c in unique if c in available]
    G = as_array(xp, g, *arrs)
    expr = ",".join([out] + others) + "->" + "".join(kept)
    if not (expr == f"{out}->{out}"):
        G = _einsum_fn(xp)(expr, G, *[a for j, a in enumerate(arrs) if j != k])
    # Lay G out with one axis per position of target: size 1 for an index
    # einsum could not produce (then broadcast) and for repeated positions
    # (then an identity mask puts G on the diagonal).
    sizes = dict(zip(kept, G.shape))
    first = {c: target.index(c) for c in unique}
    layout = tuple(sizes.get(c, 1) if first[c] == pos else 1 for pos, c in enumerate(target))
    G = xp.reshape(G, layout)
    for pos, c in enumerate(target):
        q = first[c]
        if q != pos:
            n = op.shape[q]
            mask_shape = tuple(n if i in (q, pos) else 1 for i in range(len(target)))
            eye = xp.eye(n, dtype=G.dtype, device=array_api_compat.device(G))
            G = G * xp.reshape(eye, mask_shape)
    # Sums size-1 (broadcast) axes of the operand, broadcasts the missing ones.
    return like_arg(unbroadcast(G, op), ops[k])


# ---------------------------------------------------------------------------
# Registrations

defrule(np.einsum, "*operands, out=None, optimize=False", result=results.unknown,
        operands="einsum_vjp(g, k, *operands)")
