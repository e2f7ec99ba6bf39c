"""The data model shared by the peer catalogues (autograd_cases.py, tangent_cases.py).

A catalogue is a list of :class:`Case`. Each case is one function, written as plain
NumPy / ``math`` Python in a real file (pullback reads its source), together with
a maker of example arguments and the argument numbers to differentiate::

    AG = Catalogue("numpy", "tests/test_numpy.py")

    @AG.case(lambda r: (r.randn(10, 11), r.randn(11)), argnums=(0, 1), tag="mat_vec")
    @AG.case(lambda r: (r.randn(11), r.randn(11)), argnums=(0, 1), tag="vec_vec")
    def dot(x, y):
        return np.sum(np.sin(np.dot(x, y)))

registers two cases, ``numpy/dot-mat_vec`` and ``numpy/dot-vec_vec``, that share one
function. The decorator returns the function unchanged.

The argument maker receives a ``numpy.random.RandomState`` seeded from the case id,
so every run sees the same numbers. It returns one tuple of arguments, or a list of
tuples when the peer test checks the function at several points; every point must
pass for the case to pass.

Functions with a non-scalar result in the peer test are made scalar here with
``np.sum(np.sin(...))``: the cotangent that reaches the operation under test is then
``cos(result)``, which differs from entry to entry, so a transposed or misplaced
cotangent shows up (a cotangent of all ones would hide it).

Keep comprehensions out of the decorator's arguments (name the argument maker
instead): pullback's syntax fence reads a decorated function's decorators too, and
refuses the function (see test_peers.py, "found while porting").
"""
from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Case:
    id: str                     # "<section>/<function>[-<tag>]", unique in its catalogue
    fn: Callable
    args: Callable              # RandomState -> tuple of arguments, or a list of them
    argnums: tuple
    origin: str                 # the peer file and test this case comes from
    ref: bool = False           # HIPS autograd differentiates fn as written (np rebound)
    numba: bool = False         # also run it with jit=True
    rtol: float = 1e-6
    atol: float = 1e-8

    def points(self) -> list:
        rng = np.random.RandomState(zlib.crc32(self.id.encode()))
        made = self.args(rng)
        return made if isinstance(made, list) else [made]


class Catalogue:
    """Collects cases in definition order; ``section`` prefixes their ids."""

    def __init__(self, section: str, peer_file: str, *, ref: bool = False, test_prefix="test_"):
        self.section = section
        self.test_prefix = test_prefix
        self.peer_file = peer_file
        self.default_ref = ref
        self.cases: list[Case] = []

    def case(self, args, argnums=0, *, tag: str = "", peer: str = "", ref: bool | None = None,
             numba: bool = False, rtol: float = 1e-6, atol: float = 1e-8):
        if isinstance(argnums, int):
            argnums = (argnums,)

        def register(fn):
            name = fn.__name__ + (f"-{tag}" if tag else "")
            case_id = f"{self.section}/{name}"
            if any(c.id == case_id for c in self.cases):
                raise ValueError(f"duplicate case id {case_id}")
            origin = f"{self.peer_file}::{peer or self.test_prefix + fn.__name__}"
            self.cases.append(Case(
                case_id, fn, args, tuple(argnums), origin,
                ref=self.default_ref if ref is None else ref, numba=numba, rtol=rtol, atol=atol))
            return fn

        return register
