"""Which optimisations the transform applies, and the reference mode that turns them off.

Every optimisation of the derivative drops work that provably changes no
result: a save of a value no later adjoint reads, a taped temporary that is
cheaper to compute again, a sum onto an operand's shape that cannot have
broadcast, a peephole on the generated sweeps.  Each states its invariant in
its own docstring.  An invariant that does not hold gives a wrong gradient, so
each is checked against the *reference derivative*, made with all of them off:

* every assignment that overwrites a value some adjoint reads saves it
  (the plainest tape: no flow analysis, no "one value for the whole call");
* nothing is recomputed, no shape fact is used, no loop sum is deferred, every
  loop is taped whole (none re-run in the reverse sweep, none cut into
  checkpointed segments);
* the sweeps are emitted as generated, without peepholes or fusion;
* adjoints are NumPy buffers or values (no list buffers, no local temporaries).

The tests compare optimised and reference gradients of every test program
(random programs, the corpus, the golden-file functions, the peers' cases) to
1e-12, relative.  A contributor turns the reference on for a whole run with the
environment variable ``PULLBACK_REFERENCE=1``, or for a block of code with
``with reference():``.  Either applies to derivatives generated while it is on
(a gradient function made before keeps the derivatives it already has).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Optimisations:
    """One switch per optimisation; see the module docstring for what off means."""

    saves: bool = True          # analysis/saves.py: save only what a later adjoint reads
    recompute: bool = True      # analysis/recompute.py: cheap temporaries computed again
    shape_facts: bool = True    # analysis/shapes.py: no unbroadcast where nothing broadcast
    loop_sums: bool = True      # reverse/loopsums.py: per-iteration buffer updates summed after
    peepholes: bool = True      # reverse/cleanup.py: dead resets, copies, in-place additions
    fusion: bool = True         # reverse/fusion.py: elementwise temporaries fused
    storage: bool = True        # list buffers and local temporaries for adjoints
    independent: bool = True    # analysis/independent.py: loops re-run instead of taped
    checkpoints: bool = True    # analysis/checkpoints.py: loops marked checkpointed() in segments


#: Every optimisation on: what users get.
ALL = Optimisations()
#: Every optimisation off: the derivative the optimised one is checked against.
REFERENCE = Optimisations(**{f.name: False for f in dataclasses.fields(Optimisations)})

_forced = threading.local()


def current() -> Optimisations:
    """The optimisations a derivative generated now gets: :data:`REFERENCE` inside
    ``with reference():`` or under ``PULLBACK_REFERENCE=1``, :data:`ALL` otherwise."""
    forced = getattr(_forced, "stack", None)
    if forced:
        return forced[-1]
    if os.environ.get("PULLBACK_REFERENCE", "").strip() not in ("", "0"):
        return REFERENCE
    return ALL


@contextlib.contextmanager
def reference(optimisations: Optimisations = REFERENCE):
    """Generate derivatives with ``optimisations`` (by default none) inside the block."""
    stack = getattr(_forced, "stack", None)
    if stack is None:
        stack = _forced.stack = []
    stack.append(optimisations)
    try:
        yield optimisations
    finally:
        stack.pop()
