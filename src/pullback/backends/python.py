"""The pure-Python backend: a list stack as the tape, the generated code run as is.

One list holds every saved value; ``_push``/``_pop`` are its bound
``append``/``pop`` (the cheapest stack CPython has).  Float scalars have a
stack of their own, converted to Python floats in one C call before the
reverse sweep.
"""
from __future__ import annotations

import ast

from .base import Backend, Deferred, TapeNeeds, parse_statements


class PythonBackend(Backend):
    name = "python"

    def tape(self, needs: TapeNeeds):
        return PythonTape(needs)


class PythonTape:
    def __init__(self, needs: TapeNeeds):
        self.needs = needs
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
        return parse_statements(src)

    def between(self) -> list:
        return [Deferred(self.between_code)]

    def workspace(self) -> list:
        """Arrays kept from one call to the next (see the Numba tape): none here."""
        return []

    def between_code(self) -> list:
        src = ""
        if "any" in self.used:
            src += "_pop = _stack.pop\n"
        if "float" in self.used:
            # Float scalars read from NumPy arrays are NumPy scalars, whose arithmetic
            # costs several times a Python float's: convert the saved ones once, in C.
            src += "_fpop = list(map(float, _fstack)).pop\n"
        return parse_statements(src)

    def _float(self, name):
        k = self.needs.kinds.get(name)
        return k is not None and k.ndim == 0 and k.dtype == "f"

    def push(self, name):
        self.used.add("float" if self._float(name) else "any")
        return parse_statements(f"_fpush({name})" if self._float(name) else f"_push({name})")

    def pop(self, name):
        return parse_statements(f"{name} = _fpop()" if self._float(name) else f"{name} = _pop()")

    def element_key(self, array, index):
        """The tape that saves ``array[index]`` (one stack holds everything here)."""
        return array + "[]"

    def push_element(self, array, index):
        item = ast.Subscript(ast.Name(array), index, ast.Load())
        if not self.needs.selects_element(array, index):
            # A row or slice is a view: save a copy, not what the write will change.
            item = ast.Call(ast.Attribute(item, "copy", ast.Load()), [], [])
        self.used.add("any")
        return [ast.Expr(ast.Call(ast.Name("_push"), [item], []))]

    def pop_element(self, array, index):
        return [ast.Assign([ast.Subscript(ast.Name(array), index, ast.Store())],
                           ast.Call(ast.Name("_pop"), [], []))]


PYTHON = PythonBackend()
