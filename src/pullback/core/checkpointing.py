"""``checkpointed``: the mark that has a long loop's gradient kept in bounded memory.

::

    for t in pullback.checkpointed(range(nsteps)):
        y = step(y, t)

Run as plain Python, ``checkpointed(it)`` is ``it`` itself.  In a function that
pullback differentiates in reverse mode, the loop is cut into segments of
``every`` iterations (by default about the square root of the trip count): the
forward sweep runs it without a tape and keeps, at the start of each segment,
only the values the segment carries in; the reverse sweep, last segment first,
restores them, runs the segment again with its tape and reverses it
(:mod:`pullback.analysis.checkpoints`).  Memory: one segment's tape plus one
snapshot per segment, about ``2 sqrt(n)`` iterations' worth instead of ``n``;
time: the loop runs once more.  Forward mode ignores the mark.
"""
from __future__ import annotations

import numbers


def checkpointed(iterable, every=None):
    """Mark the loop ``for ... in checkpointed(iterable)`` for checkpointing.

    ``every``: iterations per segment, a positive int, or None for
    ``ceil(sqrt(n))`` of a loop of ``n`` iterations.  Smaller segments keep
    less tape and more snapshots.  Returns ``iterable`` unchanged."""
    if every is not None and (isinstance(every, bool) or not isinstance(every, numbers.Integral)
                              or every < 1):
        raise ValueError(f"checkpointed(every=...) takes a positive int or None, got {every!r}")
    return iterable
