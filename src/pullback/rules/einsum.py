"""The derivative of ``np.einsum``.

``einsum`` takes any number of operands and any subscripts (explicit or
implicit output, ``...``, repeated indices such as ``ii->`` or ``ii->i``,
indices summed inside one operand, size-1 broadcasting): the cotangent of
operand k is an einsum of ``g`` with the other operands whose output is
operand k's subscripts; indices that einsum cannot output (repeated ones,
those present only in operand k) are put back by broadcasting and identity
masks.  The sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` is turned
into the string form once (:func:`einsum_subscripts`), labels numbered as
NumPy numbers them.  Numba has no einsum: under ``jit=True`` its twin and the
helper's are loops generated for the subscripts (constant strings, or constant
label lists), one compiled function per call's subscripts and operand ranks.

Conventions are those of :mod:`pullback.rules.elementwise`; the helper takes
the operand number (``einsum_vjp(g, k, ...)``).
"""
from __future__ import annotations

import ast
from collections import Counter

import array_api_compat
import numpy as np

from ..core.kinds import Kind
from . import results, twins
from .elementwise import as_array, like_arg, namespace, unbroadcast
from .forms import numba_twin
from .registry import defrule
from .tangents import deftangent

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


def einsum_result(fn, args, kws, call) -> Kind:
    """The result kind of ``einsum`` with constant subscripts: one axis per output
    index (:func:`parse_einsum`'s); of unknown rank with an ellipsis, or subscripts
    not written in the call."""
    first, operands = (call.args[0] if call.args else None), args[1:]
    dtype = results.operands_dtype(operands)
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return results.unknown(fn, args, kws, call)
    if "." in first.value:
        return Kind(-1, dtype)          # an ellipsis: its rank comes from the operands
    try:
        _, out = parse_einsum(first.value, [None] * len(operands))
    except ValueError:                  # not one term per operand: NumPy will say so
        return Kind(-1, dtype)
    return Kind(len(out), dtype)


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
# Numba twins: einsum and its cotangents as loops written for the subscripts.
#
# The subscripts reach a twin as a literal string (the generated code passes them
# inline), so each call is compiled for its own subscripts and operand ranks: one
# loop per index, every operand read at its indices (an axis of size 1 read at 0,
# as einsum broadcasts it).  The cotangent of operand k is the same loop nest with
# g read at the output's indices in place of operand k, added into operand k's
# shape at its own indices: a repeated index (``ii``) lands on the diagonal, an
# index present in operand k only is summed over its whole range, a broadcast axis
# (size 1) sums what it was broadcast to.

def _numba_terms(args, what):
    """``(positions, ins, out)`` of ``np.einsum(*args)`` from the Numba types of its
    arguments: the place of each operand in ``args``, its subscripts and the
    output's (letters for ``...``, the output made explicit)."""
    from numba import types
    first = args[0] if args else None
    if isinstance(first, (types.UnicodeType, types.StringLiteral)):
        subscripts = twins.literal(first)
        if not isinstance(subscripts, str):
            twins.unsupported(f"{what} with subscripts that are not a constant string")
        positions = list(range(1, len(args)))
    else:
        # The sublist form: the label lists reach Numba as tuples of literal ints.
        lists = [_numba_labels(t, what) if j % 2 or j == len(args) - 1 else t
                 for j, t in enumerate(args)]
        try:
            subscripts, _, positions = einsum_subscripts(lists)
        except ValueError as e:
            twins.unsupported(f"{what} with these label lists ({e})")
    ranks = [twins.rank(args[p]) for p in positions]
    for p, r in zip(positions, ranks):
        if r is None or (r == 0 and isinstance(args[p], types.Array)):
            twins.unsupported(f"{what} of {args[p]}")
    try:
        ins, out = parse_einsum(subscripts, ranks)
    except ValueError as e:
        twins.unsupported(f"{what} with subscripts {subscripts!r} ({e})")
    letters = set("".join(ins))
    if any((t and not t.isalpha()) or len(t) != r for t, r in zip(ins, ranks)) \
            or not (out.isalpha() or out == "") or len(set(out)) != len(out) \
            or not set(out) <= letters:
        twins.unsupported(f"{what} with subscripts {subscripts!r} for operands of ranks {ranks}")
    return positions, ins, out


def _numba_labels(t, what):
    """The labels of a sublist-form label list of Numba type ``t`` (a tuple of
    literal ints and ``...``)."""
    from numba import types
    labels = []
    for e in t if isinstance(t, types.BaseTuple) else [None]:
        if isinstance(e, types.EllipsisType):
            labels.append(Ellipsis)
        elif isinstance(twins.literal(e), int):
            labels.append(twins.literal(e))
        else:
            twins.unsupported(f"{what} in the sublist form with the label list {t} "
                              "(not constant integers and ...)")
    return labels


def _numba_dtype(*ts):
    """The NumPy scalar type of the result of arithmetic on values of Numba types ``ts``."""
    from numba import types
    from numba.np.numpy_support import as_dtype
    dts = [as_dtype(types.unliteral(t.dtype if isinstance(t, types.Array) else t)) for t in ts]
    return np.result_type(*dts).type


def _read(name, term):
    """Source reading operand ``name`` (subscripts ``term``) at the loop indices."""
    if not term:
        return name
    return f"{name}[{', '.join(f'i_{c} * m{name}_{d}' for d, c in enumerate(term))}]"


def _sizes_source(names, terms):
    """Lines setting ``n_c``, the size of each index c of ``terms`` (the subscripts of
    operands ``names``), checking that the operands' axes agree (or are 1), and
    ``m<name>_<axis>``: 1 where an axis runs along its index, 0 where it is broadcast."""
    lines = []
    for c in dict.fromkeys("".join(terms)):
        dims = ", ".join(f"{n}.shape[{d}]" for n, t in zip(names, terms)
                         for d, x in enumerate(t) if x == c)
        lines.append(f"n_{c} = max({dims}) if min({dims}) > 0 else 0" if "," in dims
                     else f"n_{c} = {dims}")
    for n, t in zip(names, terms):
        for d, c in enumerate(t):
            lines += [f"if {n}.shape[{d}] != n_{c} and {n}.shape[{d}] != 1:",
                      "    raise ValueError('einsum: operands could not be broadcast together')",
                      f"m{n}_{d} = 1 if {n}.shape[{d}] == n_{c} else 0"]
    return lines


def _loops_source(names, terms, outer, write):
    """Loops over the indices ``outer`` around loops over the other indices of
    ``terms``, which sum the product of the operands ``names`` into ``acc``;
    ``write`` is the line that stores ``acc``, inside the outer loops."""
    inner = [c for c in dict.fromkeys("".join(terms)) if c not in outer]
    product = " * ".join(_read(n, t) for n, t in zip(names, terms)) or "1"
    lines = []
    for depth, c in enumerate(outer):
        lines.append("    " * depth + f"for i_{c} in range(n_{c}):")
    lines.append("    " * len(outer) + "acc = _dt(0)")
    for depth, c in enumerate(inner, len(outer)):
        lines.append("    " * depth + f"for i_{c} in range(n_{c}):")
    lines.append("    " * (len(outer) + len(inner)) + f"acc += {product}")
    lines.append("    " * len(outer) + write)
    return lines


_BODIES: dict = {}


def _compiled(params, lines, dt):
    """A compiled function ``def body(params): lines`` (``_dt``: the scalar type ``dt``).
    Made from source: its loop nest and its parameters follow the subscripts.  Not
    inlined: the twins call it with their operands unpacked from a tuple (``*``),
    which Numba's inliner does not take."""
    key = (params, tuple(lines), dt)
    if key not in _BODIES:
        from numba import njit
        body = twins.function_from_source("body", params.split(", "), lines,
                                          {"np": np, "_dt": dt})
        _BODIES[key] = njit(body)
    return _BODIES[key]


def _picking(sources):
    """A compiled ``f(args, g)``: the tuple of ``args[p]`` for each ``p`` in ``sources``,
    ``g`` itself for None."""
    return twins.tuple_of(len(sources), lambda i: _pick(sources[i]))


def _pick(p):
    if p is None:
        return lambda args, g: g
    return lambda args, g: args[p]


def _einsum_body(ins, out, dt):
    """``einsum`` of operands ``a0, a1, ...`` (subscripts ``ins``, output ``out``)."""
    names = [f"a{j}" for j in range(len(ins))]
    lines = _sizes_source(names, ins)
    if not out:
        return _compiled(", ".join(names), lines + _loops_source(names, ins, "", "return acc"),
                         dt)
    shape = "".join(f"n_{c}, " for c in out)
    lines += [f"out = np.empty(({shape}), _dt)"]
    lines += _loops_source(names, ins, out, f"out[{', '.join('i_' + c for c in out)}] = acc")
    return _compiled(", ".join(names), lines + ["return out"], dt)


def _einsum_vjp_body(ins, out, k, dt, g_term):
    """The cotangent of operand ``k`` of ``einsum``: a function of ``x`` (operand k,
    for its shape), the other operands and ``g`` (subscripts ``g_term``: the
    output's, or none for a number).  It loops over operand k's indices, summing
    the product of the others and g over the rest, and adds the sum into operand
    k's element (the diagonal for a repeated index; element 0 of a broadcast axis)."""
    names = [f"a{j}" for j in range(len(ins)) if j != k] + ["g"]
    terms = [t for j, t in enumerate(ins) if j != k] + [g_term]
    target = ins[k]
    if not target:                  # a number operand: a number cotangent
        lines = _sizes_source(names, terms) + _loops_source(names, terms, "", "return acc")
        return _compiled(", ".join(names), lines, dt)
    at = ", ".join(f"i_{c} * mx_{d}" for d, c in enumerate(target))
    lines = _sizes_source(["x"] + names, [target] + terms) + ["out = np.zeros(x.shape, _dt)"]
    lines += _loops_source(names, terms, "".join(dict.fromkeys(target)), f"out[{at}] += acc")
    return _compiled(", ".join(["x"] + names), lines + ["return out"], dt)


def _einsum_numba(*operands):
    positions, ins, out = _numba_terms(operands, "np.einsum")
    body = _einsum_body(ins, out, _numba_dtype(*[operands[p] for p in positions]))
    picked = _picking(positions)
    return lambda *operands: body(*picked(operands, None))


def _einsum_vjp_numba(g, k, *args):
    from numba import types
    what = "the derivative of np.einsum"
    positions, ins, out = _numba_terms(args, what)
    at = twins.literal(k)
    if not isinstance(at, int) or at not in positions:
        twins.unsupported(f"{what} for an operand not known when compiling")
    j = positions.index(at)
    g_rank = twins.rank(g)
    if g_rank is None or g_rank not in (0, len(out)) or (isinstance(g, types.Array) and g.ndim == 0):
        twins.unsupported(f"{what} with the cotangent {g} of an output of rank {len(out)}")
    others = [p for i, p in enumerate(positions) if i != j]
    body = _einsum_vjp_body(ins, out, j, _numba_dtype(g, *[args[p] for p in others]),
                            out if g_rank else "")
    picked = _picking(([at] if ins[j] else []) + others + [None])
    return lambda g, k, *args: body(*picked(args, g))


numba_twin(np.einsum, always=True)(_einsum_numba)
numba_twin(einsum_vjp)(_einsum_vjp_numba)


# ---------------------------------------------------------------------------
# Registrations

defrule(np.einsum, "*operands, out=None, optimize=False", result=einsum_result,
        operands="einsum_vjp(g, k, *operands)")
deftangent(np.einsum, multilinear="operands")
