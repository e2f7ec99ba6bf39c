"""Errors that point at the user's source: file, line, construct, source line."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where a node of the user's code came from."""

    filename: str
    lineno: int
    line: str = ""
    function: str = ""

    def __str__(self) -> str:
        where = f'File "{self.filename}", line {self.lineno}'
        if self.function:
            where += f", in {self.function}"
        if self.line:
            where += f"\n    {self.line.strip()}"
        return where


class PullbackError(Exception):
    """Base class of pullback's own errors."""


class UnsupportedSyntaxError(PullbackError, SyntaxError):
    """A construct the transform does not differentiate.

    The message names the file, the line, the construct and what to do instead.
    """

    def __init__(self, construct: str, loc: Location | None, hint: str = ""):
        self.construct = construct
        self.location = loc
        msg = f"pullback cannot differentiate {construct}"
        if hint:
            msg += f": {hint}"
        if loc is not None:
            msg += f"\n  {loc}"
        super().__init__(msg)
        # SyntaxError's own fields, so tracebacks and IDEs point at the line.
        if loc is not None:
            self.filename, self.lineno, self.text = loc.filename, loc.lineno, loc.line
        self.msg = msg

    def __str__(self) -> str:
        return self.msg


class MissingRuleError(PullbackError, TypeError):
    """A call to a function that has neither a derivative rule nor Python source."""


class SourceUnavailableError(PullbackError, TypeError):
    """The source of a function cannot be read (builtin, REPL string, C extension)."""


class NumbaCompileError(PullbackError, TypeError):
    """The generated derivative could not be compiled with Numba (jit=True)."""


class InternalError(PullbackError, AssertionError):
    """The transform met something it should have handled or refused earlier.

    Always a bug in pullback: the message names the construct and, where known,
    the user's source line, so that the report can be acted on.
    """


# Users meet these as pullback.X (that is where they are exported), not as the
# module that happens to define them.
for _cls in (PullbackError, UnsupportedSyntaxError, MissingRuleError, SourceUnavailableError,
             NumbaCompileError, InternalError):
    _cls.__module__ = "pullback"


def located(what: str, loc: Location, hint: str = "", cls=UnsupportedSyntaxError) -> PullbackError:
    """The error of class ``cls`` that refuses ``what`` at ``loc``, with ``hint``
    (what to write instead) when there is one."""
    if cls is UnsupportedSyntaxError:
        return UnsupportedSyntaxError(what, loc, hint)
    return cls(f"{what}\n  {loc}" + (f"\n{hint}" if hint else ""))


class PerformanceWarning(UserWarning):
    """Something runs, but slower than it could: a call that compiled code makes
    through Numba's object mode (once per callable)."""


def user_stacklevel() -> int:
    """The ``stacklevel`` for ``warnings.warn``, called from pullback, that makes the
    warning name the first frame outside pullback's package: the user's line."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level
