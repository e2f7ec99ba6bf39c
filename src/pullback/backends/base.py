"""What a backend is: the policies the transform asks about, its tape, its compile step.

A backend is an object; the transform never tests which one it has.  It asks
the backend's policies (below) and lets the backend's tape write the pushes and
pops.  A new backend is a new subclass, with no change to the transform.
"""
from __future__ import annotations

import ast

from ..reverse.ops import TapeNeeds


class Backend:
    """The Python-backend defaults; subclasses override what differs."""

    name = "python"
    #: A variable keeps one type for the whole function (Numba's typing): every
    #: float array's adjoint is an array from the start, and a variable saved or
    #: buffered before its first assignment gets a placeholder of its type.
    fixed_types = False
    #: Re-read elements of never-written arrays in the reverse sweep instead of
    #: saving them (cheap when compiled; in CPython a saved float pops faster).
    recompute_array_reads = False
    #: A 1-D adjoint updated only element by element may be a Python list
    #: (cheapest in CPython: no NumPy scalar boxing per update).
    list_buffers = True
    #: A cotangent added to a buffer in every iteration of a loop may be added once
    #: after it, by the rule's summed form (see reverse/loopsums.py).
    loop_sums = True
    #: A loop whose iterations share nothing but sums is run again in the reverse
    #: sweep instead of taped (see analysis/independent.py).  Compiled, a re-run
    #: costs less than a store and a load; in CPython popping a saved float is
    #: cheaper than running its statements again (pair energies: 1.3-1.8x slower).
    reruns_independent_loops = False
    #: A recursive call may be differentiated at run time, one level at a time.
    runtime_recursion = True
    #: A tuple of numbers passed to a library function (``np.mean([x, y])``) is
    #: made an array first, in a statement of its own.
    sequences_as_arrays = False
    #: ``da[i:j] += g`` is written ``add_into(da[i:j], g)``: Numba's augmented
    #: assignment to a slice builds the sum and copies it back; NumPy's adds in place.
    add_into_views = False
    #: Compiling freezes the values of the globals and closure cells the code reads
    #: (Numba's rule): the generated function takes those that hold data as
    #: arguments instead, read when it is called, as the primal reads them.
    freezes_globals = False

    def accumulate_into(self, helper):
        """A function ``f(out, *args)`` doing ``out += helper(*args)`` in place without
        the temporary, for an adjoint buffer ``out`` of the argument's shape; or None."""
        return None

    def tape(self, needs: TapeNeeds):
        """The object that writes this backend's pushes and pops."""
        raise NotImplementedError

    def bind_helper(self, obj):
        """The object the generated code should call for helper ``obj``."""
        return obj

    def calls_as_is(self, obj) -> bool:
        """Whether the generated code calls helper ``obj`` itself (then it may read it
        by the user's own global name), not another object bound for it."""
        return self.bind_helper(obj) is obj

    def primal_twin(self, callee, method, call, kind=None, result=None):
        """A callable for the forward sweep to call instead of the primal ``callee``
        (or of the ndarray method ``method``, receiver first) in ``call``, or None:
        call it as written.  ``kind(atom)`` is the kind of an argument, ``result``
        the call's."""
        return None

    def check_rule(self, tr, s, rule, bound) -> None:
        """Refuse, with an error located at statement ``s``, a rule whose derivative
        this backend cannot run for the arguments ``bound``."""

    def check_index(self, tr, s, index_kinds) -> None:
        """Refuse, with an error located at statement ``s``, an index this backend
        cannot apply; ``index_kinds`` are the kinds of its array and int items."""

    def finish(self, fn, src: str, filename: str, origins, live=()):
        """The callable to hand out for the generated function ``fn``; ``origins[k]``:
        the user's source line that line ``k`` of the compiled code comes from, or None;
        ``live``: the values ``fn`` takes as its last arguments, read at each call
        (:func:`pullback.emit.live_values`)."""
        return fn

    def primal(self, f, py_func):
        """The function to call for the primal value of ``f``."""
        return py_func

    def __repr__(self):
        return f"<pullback {self.name} backend>"


class Deferred(ast.stmt):
    """Statements known only once every push is: ``make()`` gives them at emission."""

    _fields = ()

    def __init__(self, make):
        super().__init__()
        self.make = make
