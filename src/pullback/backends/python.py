"""The pure-Python backend: a list stack as the tape, the generated code run as is.

One list holds every saved value; ``_push``/``_pop`` are its bound
``append``/``pop`` (the cheapest stack CPython has).  Float scalars have a
stack of their own, converted to Python floats in one C call before the
reverse sweep.  The tape writes its statements as AST nodes (the builders of
:mod:`pullback.reverse.ops`), each push or pop held by a typed ``Push`` or
``Pop`` statement of the sweeps: ``push``/``pop`` wrap what the backend's
``push_code``/``pop_code`` write.
"""
from __future__ import annotations

import ast

from ..reverse.ops import Pop, Push, assign, attribute, call, expr_stmt, store, subscript, tape_op
from .base import Backend, Deferred, TapeNeeds


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

    def setup(self) -> list:
        return [Deferred(self.setup_code)]

    def setup_code(self) -> list:
        """``_stack = []; _push = _stack.append`` (and the float stack's), as used."""
        out = []
        for kind, stack, push in (("any", "_stack", "_push"), ("float", "_fstack", "_fpush")):
            if kind in self.used:
                out += [assign(stack, ast.List([], ast.Load())),
                        assign(push, attribute(stack, "append"))]
        return out

    def between(self) -> list:
        return [Deferred(self.between_code)]

    def workspace(self) -> list:
        """Arrays kept from one call to the next (see the Numba tape): none here."""
        return []

    def between_code(self) -> list:
        out = []
        if "any" in self.used:
            out.append(assign("_pop", attribute("_stack", "pop")))
        if "float" in self.used:
            # Float scalars read from NumPy arrays are NumPy scalars, whose arithmetic
            # costs several times a Python float's: convert the saved ones once, in C.
            floats = call("list", call("map", ast.Name("float", ast.Load()), ast.Name("_fstack")))
            out.append(assign("_fpop", attribute(floats, "pop")))
        return out

    def replayed(self, forward: list, reverse: list) -> list:
        """A segment of a checkpointed loop run again with its tape (``forward``), then
        reversed: the numbers it pushes are popped from their own list, converted
        as ``between`` converts the others, and the other pops resume after it."""
        mark, outer = self.needs.names.fresh("_mark"), self.needs.names.fresh("_fpop_outer")

        def before():
            return [assign(mark, call("len", ast.Name("_fstack")))] if "float" in self.used \
                else []

        def converted():
            if "float" not in self.used:
                return []
            tail = ast.Subscript(ast.Name("_fstack"), ast.Slice(ast.Name(mark), None), ast.Load())
            floats = call("list", call("map", ast.Name("float", ast.Load()), tail))
            return [assign(outer, ast.Name("_fpop")), assign("_fpop", attribute(floats, "pop")),
                    ast.Delete([ast.Subscript(ast.Name("_fstack"), ast.Slice(ast.Name(mark), None),
                                              ast.Del())])]

        def after():
            return [assign("_fpop", ast.Name(outer))] if "float" in self.used else []
        return [Deferred(before)] + forward + [Deferred(converted)] + reverse + [Deferred(after)]

    def _float(self, name):
        k = self.needs.kinds.get(name)
        return k is not None and k.ndim == 0 and k.dtype == "f"

    def push(self, name) -> list:
        """Save ``name`` before the forward sweep overwrites it."""
        return [tape_op(Push, name, None, self.push_code(name))]

    def pop(self, name) -> list:
        """Restore ``name`` in the reverse sweep."""
        return [tape_op(Pop, name, None, self.pop_code(name))]

    def push_element(self, array, index) -> list:
        """Save ``array[index]`` (an element, a row or a slice) before it is written."""
        return [tape_op(Push, array, index, self.push_element_code(array, index))]

    def pop_element(self, array, index) -> list:
        return [tape_op(Pop, array, index, self.pop_element_code(array, index))]

    def push_code(self, name):
        self.used.add("float" if self._float(name) else "any")
        return [expr_stmt(call("_fpush" if self._float(name) else "_push", ast.Name(name)))]

    def pop_code(self, name):
        return [assign(name, call("_fpop" if self._float(name) else "_pop"))]

    def element_key(self, array, index):
        """The tape that saves ``array[index]`` (one stack holds everything here)."""
        return array + "[]"

    def push_element_code(self, array, index):
        item = subscript(array, index)
        if not self.needs.selects_element(array, index):
            # A row or slice is a view: save a copy, not what the write will change.
            item = call(attribute(item, "copy"))
        self.used.add("any")
        return [expr_stmt(call("_push", item))]

    def pop_element_code(self, array, index):
        return [store(subscript(array, index), call("_pop"))]


PYTHON = PythonBackend()
