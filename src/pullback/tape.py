"""How the forward sweep saves values for the reverse sweep.

Both strategies are stacks: the reverse sweep pops exactly what the forward
sweep pushed, in mirror order, because it replays the same control flow
backwards.

* Python backend: one list for everything; ``_push``/``_pop`` are its bound
  ``append``/``pop`` (the cheapest stack CPython has).
* Numba backend: one typed array per saved variable with its own counter,
  doubled when full (amortised O(1), no per-push allocation), so the compiled
  loop is as tight as a hand-written adjoint that stores into an array.
"""
from __future__ import annotations

import ast

import numpy as np

from .runtime import reserve


def for_backend(backend: str, transform):
    return NumbaTape(transform) if backend == "numba" else PythonTape(transform)


def _stmt(src: str) -> list:
    return ast.parse(src).body


class PythonTape:
    def __init__(self, transform):
        self.t = transform
        self.reserved: set = set()     # tapes with room already made in this loop
        self.used: set = set()         # which of the two stacks the code uses

    def reserve(self, counts: dict, trips: ast.expr) -> list:
        return []

        self.used: set = set()         # which of the two stacks the code uses

    def setup(self) -> list:
        return [Deferred(self.setup_code)]

    def setup_code(self) -> list:
        src = ""
        if "any" in self.used:
            src += "_stack = []\n_push = _stack.append\n"
        if "float" in self.used:
            src += "_fstack = []\n_fpush = _fstack.append\n"
        return _stmt(src)

    def between(self) -> list:
        return [Deferred(self.between_code)]

    def between_code(self) -> list:
        src = ""
        if "any" in self.used:
            src += "_pop = _stack.pop\n"
        if "float" in self.used:
            # Float scalars read from NumPy arrays are NumPy scalars, whose arithmetic
            # costs several times a Python float's: convert the saved ones once, in C.
            src += "_fpop = list(map(float, _fstack)).pop\n"
        return _stmt(src)

    def _float(self, name):
        k = self.t.kinds.get(name)
        return k is not None and k.ndim == 0 and k.dtype == "f"

    def push(self, name):
        self.used.add("float" if self._float(name) else "any")
        return _stmt(f"_fpush({name})" if self._float(name) else f"_push({name})")

    def pop(self, name):
        return _stmt(f"{name} = _fpop()" if self._float(name) else f"{name} = _pop()")

    def push_element(self, array, index):
        item = ast.Subscript(ast.Name(array), index, ast.Load())
        if not self.t_scalar_index(index):
            item = ast.Call(ast.Attribute(item, "copy", ast.Load()), [], [])
        self.used.add("any")
        return [ast.Expr(ast.Call(ast.Name("_push"), [item], []))]

    def pop_element(self, array, index):
        return [ast.Assign([ast.Subscript(ast.Name(array), index, ast.Store())],
                           ast.Call(ast.Name("_pop"), [], []))]

    def t_scalar_index(self, index):
        from .reverse import _is_basic_scalar_index
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        return all(_is_basic_scalar_index(i, self.t.kind) for i in parts)


_NUMBA_DTYPES = {"f": "np.float64", "i": "np.int64", "b": "np.bool_", "c": "np.complex128"}


class NumbaTape(PythonTape):
    def __init__(self, transform):
        super().__init__(transform)
        self.tapes: dict[str, tuple] = {}

    def _tape(self, name):
        if name not in self.tapes:
            self.tapes[name] = (self.t.names.fresh(f"_tape_{name.lstrip('_')}_"),
                                self.t.names.fresh(f"_k_{name.lstrip('_')}_"))
        return self.tapes[name]

    def between(self) -> list:
        return []

    def setup_code(self) -> list:
        np_name = self.t.helper(np, "np")
        out = []
        for name, (tape, k) in self.tapes.items():
            kind = self.t.kinds.get(name)
            if name.endswith("[]"):
                dtype = "np.float64"
            elif kind is None or kind.ndim != 0 or kind.dtype not in _NUMBA_DTYPES:
                if kind is not None and kind.ndim and kind.ndim > 0 and kind.dtype == "f":
                    shape = "(" + "0, " * kind.ndim + ")"
                    out += _stmt(f"{tape} = [{np_name}.zeros({shape})]\n{tape}.pop()")
                    continue
                raise TypeError(f"the Numba backend cannot save the value of {name!r} "
                                f"(kind {kind}) for the reverse sweep")
            else:
                dtype = _NUMBA_DTYPES[kind.dtype]
            dtype = dtype.replace("np.", np_name + ".")
            out += _stmt(f"{tape} = {np_name}.empty(64, dtype={dtype})\n{k} = 0")
        return out

    def _is_list(self, name):
        kind = self.t.kinds.get(name)
        return not name.endswith("[]") and (kind is None or kind.ndim != 0)

    def reserve(self, counts: dict, trips: ast.expr) -> list:
        out = []
        r = self.t.helper(reserve, "reserve")
        for name, c in counts.items():
            if not name.endswith("[]") and self._is_list(name):
                continue
            tape, k = self._tape(name)
            need = ast.unparse(trips) + (f" * {c}" if c != 1 else "")
            out += _stmt(f"{tape} = {r}({tape}, {k} + {need})")
        return out

    def push(self, name):
        tape, k = self._tape(name)
        if self._is_list(name):
            return _stmt(f"{tape}.append({name})")
        return self._store(name, tape, k, name)

    def _store(self, key, tape, k, item):
        """``tape[k] = item; k += 1``, growing the tape first unless the loop
        already reserved room for it."""
        check = "" if key in self.reserved else \
            f"if {k} == {tape}.shape[0]:\n    {tape} = {self.t.helper(reserve, 'reserve')}({tape}, {k} + 1)\n"
        return _stmt(f"{check}{tape}[{k}] = {item}\n{k} += 1")

    def pop(self, name):
        tape, k = self._tape(name)
        if self._is_list(name):
            return _stmt(f"{name} = {tape}.pop()")
        return _stmt(f"{k} -= 1\n{name} = {tape}[{k}]")

    def push_element(self, array, index):
        tape, k = self._tape(array + "[]")
        item = ast.unparse(ast.Subscript(ast.Name(array), index, ast.Load()))
        if not self.t_scalar_index(index):
            raise TypeError("the Numba backend saves overwritten array elements one at a "
                            f"time; {item} = ... writes a slice")
        return self._store(array + "[]", tape, k, item)

    def pop_element(self, array, index):
        tape, k = self._tape(array + "[]")
        item = ast.unparse(ast.Subscript(ast.Name(array), index, ast.Load()))
        return _stmt(f"{k} -= 1\n{item} = {tape}[{k}]")


class Deferred(ast.stmt):
    """Statements known only once every push is: ``make()`` gives them at emission."""

    _fields = ()

    def __init__(self, make):
        super().__init__()
        self.make = make
