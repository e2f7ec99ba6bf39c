"""Result kinds: what a primitive's result is, from the kinds of its arguments.

Each primitive's record (:mod:`.registry`) holds one of these functions; kind
inference calls it as ``result(fn, args, kws, call)`` with the kinds of the
positional and keyword arguments and the call's AST (for a method, the
receiver is the first argument).  This is the abstract evaluation of the
primitive: it runs before any value exists.
"""
from __future__ import annotations

import ast
import functools
import inspect
import math
import textwrap

import numpy as np

from ..core.kinds import BOOL, DTYPE_ORDER, FLOAT, INT, OTHER, SHAPE, Kind, broadcast, join


def like(fn, args, kws, call) -> Kind:
    """Elementwise: the broadcast of the numeric arguments, as a float.  An
    argument whose dtype is not known (not a literal) counts as a float of its
    rank, or of unknown rank, never as absent: else the result would be taken
    for a scalar, and its cotangents not summed onto the arguments' shapes."""
    numeric = [a if a.dtype in DTYPE_ORDER else Kind(-1 if a.ndim is None else a.ndim, "f")
               for a, x in zip(args, call.args)
               if a.dtype in DTYPE_ORDER or (a.dtype == "o" and not isinstance(x, ast.Constant))]
    k = broadcast(numeric) if numeric else FLOAT
    return Kind(k.ndim, "f" if k.dtype in "bi" else k.dtype)


def scalar(fn, args, kws, call) -> Kind:
    return FLOAT


def array(fn, args, kws, call) -> Kind:
    """A float array of a rank not known here."""
    return Kind(-1, "f")


def integer(fn, args, kws, call) -> Kind:
    return INT


def boolean(fn, args, kws, call) -> Kind:
    return BOOL


def joined(fn, args, kws, call) -> Kind:
    """One of the arguments (``abs``, ``min``, ``max``): the join of their kinds."""
    k = None
    for a in args:
        k = join(k, a)
    return k or OTHER


def builtin_reduction(fn, args, kws, call) -> Kind:
    """``max``, ``min``, ``sum``: of one array, a number of its dtype (``sum`` of
    bools counts them); of several values, the join of their kinds."""
    if len(args) == 1 and args[0].ndim is not None and args[0].ndim > 0:
        dtype = args[0].dtype
        return Kind(0, "i" if dtype == "b" else dtype) if dtype in DTYPE_ORDER else FLOAT
    return joined(fn, args, kws, call)


def _first(args) -> Kind:
    return args[0] if args else OTHER


def unknown(fn, args, kws, call) -> Kind:
    """A float, or a float array of unknown rank when any argument is an array.

    A Python function (or a Numba one's) whose every ``return`` is a tuple display
    of n items (``return value, residuals``) gives a tuple of n such kinds: its
    items are taken by index, and its cotangent is a tuple's (taking it for an
    array would index the cotangent as an array)."""
    item = FLOAT if args and all(a.ndim == 0 for a in args) else Kind(-1, "f")
    n = returned_tuple_length(fn)
    return item if n is None else Kind(None, "o", (item,) * n)


def _items_of_one_rank(k: Kind) -> Kind | None:
    """The kind of the items of a tuple or list display (``[a, b]``) when they are
    known numbers or arrays of one rank, else None."""
    items = k.items
    if not items or len({i.ndim for i in items}) != 1 or items[0].ndim is None \
            or items[0].ndim < 0 or any(i.dtype not in DTYPE_ORDER for i in items):
        return None
    return broadcast(items)


def _axis_is_none(call) -> bool:
    """Whether the call passes ``axis=None`` (by keyword, or second by position)."""
    given = [k.value for k in call.keywords if k.arg == "axis"] + list(call.args[1:2])
    return any(isinstance(a, ast.Constant) and a.value is None for a in given)


def stacked(fn, args, kws, call) -> Kind:
    """``np.stack(arrays)``: one more dimension than its items, when they are known
    and of one rank (a display ``[a, b]``); else as :func:`unknown`."""
    item = _items_of_one_rank(_first(args)) if not (set(kws) & {"out", "dtype"}) else None
    return Kind(item.ndim + 1, item.dtype) if item is not None else unknown(fn, args, kws, call)


def concatenated(fn, args, kws, call) -> Kind:
    """``np.concatenate(arrays)``: the rank of its items when they are known arrays of
    one rank (one dimension with ``axis=None``); else as :func:`unknown`."""
    item = _items_of_one_rank(_first(args)) if not (set(kws) & {"out", "dtype"}) else None
    if item is None or item.ndim == 0:
        return unknown(fn, args, kws, call)
    return Kind(1 if _axis_is_none(call) else item.ndim, item.dtype)


@functools.lru_cache(maxsize=512)
def returned_tuple_length(fn) -> int | None:
    """n when every ``return`` of ``fn``'s own body returns a tuple display of n
    items, else None (no source, a return of anything else, or of mixed lengths)."""
    fn = getattr(fn, "py_func", fn)         # a Numba dispatcher's Python function
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    if len(defs) != 1:
        return None
    lengths = {len(r.value.elts) if isinstance(r.value, ast.Tuple) else None
               for r in _own_returns(defs[0])}
    return lengths.pop() if len(lengths) == 1 else None


def _own_returns(func):
    """The return statements of ``func``, not of the functions and classes inside it."""
    stack = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            yield node
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                   ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def solved(fn, args, kws, call) -> Kind:
    """``np.linalg.solve(a, b)`` (NumPy 2): ``a``'s rank less one for a vector ``b``
    (1-D), else the larger rank of the two (stacks broadcast); unknown when either
    rank is."""
    if len(args) < 2 or not all(isinstance(k.ndim, int) and k.ndim > 0 for k in args[:2]):
        return Kind(-1, "f")
    a, b = args[:2]
    return Kind(a.ndim - 1 if b.ndim == 1 else max(a.ndim, b.ndim), "f")


def reduction(fn, args, kws, call) -> Kind:
    """``sum``, ``mean``, ``norm``...: a scalar unless an axis is given or dims are
    kept; with ``axis=`` and ``keepdims=`` written as constants (or absent), the rank
    they leave of an argument of known rank."""
    axis_given = len(call.args) > 1 or any(k.arg in ("axis", "ord") for k in call.keywords)
    first = _first(args)
    if first.ndim == 0 or (not axis_given and "keepdims" not in kws):
        return FLOAT
    given = {k.arg: k.value for k in call.keywords}
    if len(call.args) > 1 or "ord" in given or not isinstance(first.ndim, int) or first.ndim < 0 \
            or not all(isinstance(given.get(k, ast.Constant(None)), ast.Constant)
                       for k in ("axis", "keepdims")):
        return Kind(-1, "f")
    axis = given["axis"].value if "axis" in given else None
    if given.get("keepdims", ast.Constant(False)).value is True:
        return Kind(first.ndim, "f")
    if axis is None:
        return FLOAT
    removed = len(axis) if isinstance(axis, tuple) else 1
    return Kind(first.ndim - removed, "f") if removed <= first.ndim else Kind(-1, "f")


def matrix_scalar(fn, args, kws, call) -> Kind:
    """``det``, ``trace``: a scalar of a matrix (a stack of them otherwise)."""
    return FLOAT if _first(args).ndim == 2 else Kind(-1, "f")


def rounded(fn, args, kws, call) -> Kind:
    """``np.round``, ``np.fix``: the first argument's kind (its rank and dtype)."""
    return _first(args)


def same_shape(fn, args, kws, call) -> Kind:
    """``inv``, ``cumsum``: a float array of the first argument's rank."""
    first = _first(args)
    return Kind(first.ndim, "f") if first.ndim is not None else Kind(-1, "f")


def permuted(fn, args, kws, call) -> Kind:
    """``transpose``, ``swapaxes``, ``moveaxis``: the first argument's axes in
    another order (its rank, not its shape; never taken for elementwise)."""
    return same_shape(fn, args, kws, call)


def flat(fn, args, kws, call) -> Kind:
    """``ravel``, ``flatten``: one dimension, the first argument's dtype."""
    return Kind(1, _first(args).dtype)


def _numeric_dtype(k: Kind) -> str:
    """``k``'s dtype when it is a number's, else float (a value of unknown dtype)."""
    return k.dtype if k.dtype in DTYPE_ORDER else "f"


def reshaped(fn, args, kws, call) -> Kind:
    """``reshape``, ``broadcast_to``, ``x.reshape(...)``: the first argument's dtype,
    with as many dimensions as the shape has entries (a tuple of ints, one int, or
    ints passed one by one); of unknown rank when the shape's length is not known."""
    first = _first(args)
    dtype = _numeric_dtype(first)
    shape = list(args[1:]) + [kws[k] for k in ("shape", "newshape") if k in kws]
    if len(shape) == 1 and shape[0].dtype == "t" and shape[0].ndim is not None:
        return Kind(shape[0].ndim, dtype)
    if shape and all(k.ndim == 0 and k.dtype in "bi" for k in shape):
        return Kind(len(shape), dtype)
    return Kind(-1, dtype)


def expanded(fn, args, kws, call) -> Kind:
    """``expand_dims(a, axis)``: one more dimension for an int axis."""
    first, axis = _first(args), (args[1:] or [kws.get("axis", OTHER)])[0]
    dtype = _numeric_dtype(first)
    if first.ndim is not None and first.ndim >= 0 and axis.ndim == 0 and axis.dtype in "bi":
        return Kind(first.ndim + 1, dtype)
    return Kind(-1, dtype)


def squeezed(fn, args, kws, call) -> Kind:
    """``squeeze(a, axis)``: one dimension fewer per axis given; without an axis, a
    rank not known before it runs (it depends on the shape)."""
    first, axis = _first(args), (args[1:] or [kws.get("axis", OTHER)])[0]
    dtype = _numeric_dtype(first)
    removed = 1 if axis == INT else axis.ndim if axis.dtype == "t" else None
    if first.ndim is not None and first.ndim >= 0 and removed is not None \
            and removed <= first.ndim:
        return Kind(first.ndim - removed, dtype)
    return Kind(-1, dtype)


def rank_unknown(fn, args, kws, call) -> Kind:
    """``squeeze``: the first argument's dtype, a rank not known before it runs."""
    return Kind(-1, _numeric_dtype(_first(args)))


def product(fn, args, kws, call) -> Kind:
    """``dot``, ``matmul``, ``@``: a vector times a vector is a number, a matrix
    times a vector a vector, two matrices a matrix (a number scales the other
    argument under ``dot``); of unknown rank otherwise."""
    if len(args) < 2 or any(a.ndim is None or a.ndim < 0 for a in args[:2]):
        return unknown(fn, args, kws, call)
    a, b = args[0].ndim, args[1].ndim
    dtype = broadcast(list(args[:2])).dtype
    ranks = {(1, 1): 0, (2, 1): 1, (1, 2): 1, (2, 2): 2}
    if (a, b) in ranks:
        return Kind(ranks[a, b], dtype)
    if 0 in (a, b) and fn is np.dot:
        return Kind(a + b, dtype)
    return Kind(-1, dtype)


def inner_product(fn, args, kws, call) -> Kind:
    """``inner``: the last axes contracted, ``a.ndim + b.ndim - 2`` (a number scales
    the other argument)."""
    if len(args) < 2 or any(a.ndim is None or a.ndim < 0 for a in args[:2]):
        return unknown(fn, args, kws, call)
    a, b = args[0].ndim, args[1].ndim
    dtype = _numeric_dtype(broadcast(list(args[:2])))
    return Kind(a + b if 0 in (a, b) else a + b - 2, dtype)


def operands_dtype(operands) -> str:
    """The dtype a product of ``operands`` has: their common one, float when one
    is not known."""
    if not operands or any(a.dtype not in DTYPE_ORDER for a in operands):
        return "f"
    return max((a.dtype for a in operands), key=DTYPE_ORDER.index).replace("b", "i")


def outer_product(fn, args, kws, call) -> Kind:
    """``outer``: a matrix, whatever the ranks (it flattens its arguments)."""
    return Kind(2, operands_dtype(args[:2]))


def retyped(fn, args, kws, call) -> Kind:
    """``astype``: the first argument's rank, a dtype not known here."""
    return Kind(_first(args).ndim, "o")


def tuple_of_arrays(fn, args, kws, call) -> Kind:
    """``slogdet``, ``eigh``: a tuple, whose items are taken by index."""
    return OTHER


def at_least(n: int):
    """``atleast_1d``, ``_2d``, ``_3d``: the first argument's rank, at least ``n``."""
    def at_least_n(fn, args, kws, call) -> Kind:
        first = _first(args)
        if first.ndim is None or first.ndim < 0:
            return Kind(-1, "f")
        return Kind(max(first.ndim, n), "f" if first.dtype in "bi" else first.dtype)
    at_least_n.__name__ = f"at_least_{n}d"
    return at_least_n


def factors(*fewer):
    """A decomposition's tuple of float arrays, item k having ``fewer[k]`` fewer
    dimensions than the (stack of) matrices given: ``eigh`` gives ``(w, v)``,
    ``fewer = (1, 0)``."""
    def tuple_of_factors(fn, args, kws, call) -> Kind:
        n = _first(args).ndim
        if n is None or n < 2:
            return OTHER
        return Kind(None, "o", tuple(Kind(n - k, "f") for k in fewer))
    return tuple_of_factors


def svd_result(fn, args, kws, call) -> Kind:
    """``svd``: the tuple ``(u, s, vh)``, or ``s`` alone with ``compute_uv=False``."""
    given = [k.value for k in call.keywords if k.arg == "compute_uv"] + call.args[2:3]
    if given and isinstance(given[0], ast.Constant) and not given[0].value:
        return Kind(-1, "f")
    if given and not isinstance(given[0], ast.Constant):
        return OTHER         # a tuple or an array: not known here
    return factors(0, 1, 0)(fn, args, kws, call)


def new_array(fn, args, kws, call) -> Kind:
    """``zeros(shape)``, ``ones``, ``empty``, ``full``: the rank of the shape given."""
    dt = "o" if "dtype" in kws else "f"
    shape_arg = call.args[0] if call.args else None
    if shape_arg is not None:
        k0 = args[0]
        if k0 == INT:
            return Kind(1, dt)
        if isinstance(shape_arg, ast.Tuple):
            return Kind(len(shape_arg.elts), dt)
        if k0.dtype == "t":
            return Kind(k0.ndim if k0.ndim is not None else -1, dt)
    return Kind(-1, dt)


def shape_of(fn, args, kws, call) -> Kind:
    """``np.shape(x)``: a tuple of ints as long as ``x`` has dimensions."""
    k = _first(args)
    return Kind(k.ndim, "t") if k.ndim is not None and k.ndim >= 0 else SHAPE


def sequence(fn, args, kws, call) -> Kind:
    """``linspace``, ``arange``: one dimension (ints for an ``arange`` of ints); a
    ``linspace`` between array endpoints has more."""
    if "dtype" in kws:
        return Kind(-1, "o")
    if fn is np.linspace and any(a.ndim != 0 for a in args[:2]):
        return Kind(-1, "f")
    return Kind(1, "i" if fn is np.arange and all(a.dtype == "i" for a in args) else "f")


def identity_matrix(fn, args, kws, call) -> Kind:
    return Kind(-1, "o") if "dtype" in kws else Kind(2, "f")


def like_source(fn, args, kws, call) -> Kind:
    """``array(x)``, ``copy``, ``zeros_like``: the rank and dtype of the source; for
    a (nested) list of numbers, one dimension per level of nesting."""
    src = _first(args)
    nested = _nested_list(src)
    if nested is not None:
        return nested
    return Kind(src.ndim, src.dtype) if src.ndim is not None else Kind(-1, "o")


def _nested_list(k: Kind) -> Kind | None:
    """The array kind a list literal of this kind makes, or None if not known:
    ``[x, 0.5]`` is a float vector, ``[[x, y], [y, x]]`` a float matrix."""
    if k.dtype == "t" and k.ndim is not None:
        return Kind(1, "i")                 # a tuple of ints
    if k.items is None:
        return None
    inner = []
    for item in k.items:
        sub = _nested_list(item) if item.items is not None or item.dtype == "t" else item
        if sub is None or sub.ndim is None or sub.ndim < 0 or sub.dtype not in DTYPE_ORDER:
            return None
        inner.append(sub)
    if not inner or len({i.ndim for i in inner}) != 1:
        return None
    return Kind(inner[0].ndim + 1, broadcast(inner).dtype)


def generic(fn, args, kws, call) -> Kind:
    """A callable with no record: a ufunc broadcasts, ``math`` gives floats, and a
    (recursive) user function of scalars gives a scalar; anything else unknown."""
    if isinstance(fn, np.ufunc):
        return broadcast([a for a in args if a.dtype in DTYPE_ORDER] or [FLOAT])
    if getattr(fn, "__module__", "") == "math" or fn in vars(math).values():
        return FLOAT
    if callable(fn) and args and all(a.ndim == 0 and a.dtype in "bif" for a in args):
        return FLOAT
    return OTHER


#: The names ``defrule(..., result="...")`` accepts for the common cases.
BY_NAME = {"like": like, "scalar": scalar, "array": array, "int": integer, "bool": boolean,
           "any": unknown}
