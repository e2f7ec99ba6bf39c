"""The errors a user meets through pullback's functions, without pullback's frames.

Three kinds of error reach a user through ``grad``, ``vjp``, ``jvp`` and the others:

* pullback's own errors (:class:`~pullback.PullbackError`): their message names the
  user's file and line and what to write instead;
* the API's refusals of bad input, plain ``TypeError`` and ``ValueError`` (an
  ``argnums`` out of range, a non-scalar result for ``grad``, a ``has_aux`` result
  that is no pair), raised by the API's own checks (:func:`refused`);
* an error raised while a generated derivative runs (an ``IndexError`` at ``x[0]``
  of an empty array): :func:`locate` adds a note naming the user's line that the
  failing generated code was made for.

Invariant: the traceback of the first two, and of the third when nothing but the
generated code and pullback's files lie below the API function the user called,
keeps one frame of pullback's: that function's.  The generated code's own frames
stay (pdb and the traceback show the line that failed); so do all frames of an
error of the user's own code that the derivative called (a rule's VJP), and of
NumPy's Python code.  ``PULLBACK_DEBUG=1`` keeps every frame.
"""
from __future__ import annotations

import os

#: pullback's package directory: a frame is the library's when its file is in here.
LIBRARY = os.path.dirname(os.path.realpath(__file__))
#: The modules whose plain TypeError and ValueError are refusals of the user's input
#: (the API's functions and the argument, pytree and rule-registration checks).
_API_FILES = frozenset(os.path.join(LIBRARY, *name.split("/")) for name in (
    "api.py", "arguments.py", "trees.py", "jacobians.py", "jacobian_trees.py", "custom.py",
    "nesting.py", "check.py", "core/trees.py", "rules/registry.py", "vmap.py",
    "sparse_jacobians.py", "hessians.py", "tangent_calls.py"))


def debugging() -> bool:
    """``PULLBACK_DEBUG=1``: keep pullback's frames in every error."""
    return os.environ.get("PULLBACK_DEBUG", "") not in ("", "0")


def for_user(exc: BaseException) -> BaseException:
    """``exc`` without any frame: the API function raises it again (``raise
    for_user(exc) from None``), which shows that function's frame alone.  Its
    message says what is wrong (pullback's own errors name the user's file, line
    and the fix).  Marked, so that API functions it passes through on its way out
    cut their frames too (:func:`cut_for_user`)."""
    exc._pullback_for_user = True
    if debugging():
        return exc
    return exc.with_traceback(None)


def _real(filename: str) -> str:
    return os.path.realpath(filename) if filename and not filename.startswith("<") \
        else filename


def in_library(filename: str) -> bool:
    """Whether ``filename`` is one of pullback's own files."""
    return _real(filename).startswith(LIBRARY + os.sep)


def _entries(tb) -> list:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def _file(tb) -> str:
    return tb.tb_frame.f_code.co_filename


def refused(exc: BaseException) -> bool:
    """Whether ``exc``, caught by an API function, is the API's refusal of bad input
    (a TypeError or ValueError raised in one of the API's modules, every frame below
    the catching one pullback's: not a bug deep in the transform, nor an error of
    the user's code or of NumPy) or was made for the user already on its way
    (:func:`for_user`, :func:`locate`)."""
    if getattr(exc, "_pullback_for_user", False):
        return True
    files = [_file(tb) for tb in _entries(exc.__traceback__)]
    return bool(files) and all(map(in_library, files)) and \
        isinstance(exc, (TypeError, ValueError)) and _real(files[-1]) in _API_FILES


def _cut(exc: BaseException) -> None:
    """``exc``'s traceback without pullback's frames but the first, the catching API
    function's own (in place: a bare ``raise`` then raises it so)."""
    exc._pullback_for_user = True
    if debugging():
        return
    entries = _entries(exc.__traceback__)
    keep = entries[:1] + [tb for tb in entries[1:] if not in_library(_file(tb))]
    for a, b in zip(keep, keep[1:]):
        a.tb_next = b
    if keep:
        keep[-1].tb_next = None


def cut_for_user(exc: BaseException) -> None:
    """Cut ``exc``, which an API function caught, to that function's frame and the
    frames that are not pullback's (the generated code's, the user's) when it is
    :func:`refused`; else leave it as it is.  In place: the function raises it again
    with a bare ``raise``::

        except Exception as exc:
            cut_for_user(exc)
            raise
    """
    if refused(exc):
        _cut(exc)
        if exc.__cause__ is None:
            exc.__suppress_context__ = True     # no internal exception it was raised in


def locate(exc: BaseException, site, rerun=None, args=()) -> None:
    """Add to ``exc``, raised while the derivative described by ``site`` (a
    :class:`pullback.emit.LineMap`) ran, a note naming the user's line that the
    failing generated code was made for.  Compiled code (Numba) has no frame of its
    own in the traceback: ``rerun(*args)``, when given, runs the same generated code
    as Python to find the line (an error is rare, and this is its path only).

    When nothing lies below the catching frame but the generated code and
    pullback's files, the traceback is cut to the catching frame and the generated
    code's (in place, as :func:`cut_for_user` does; raise it with a bare ``raise``)."""
    if _located(exc, site, rerun, args):
        _cut(exc)


def _located(exc, site, rerun, args) -> bool:
    """:func:`locate`'s note; whether only pullback's code lies under the catcher."""
    if site is None:
        return False
    entries = _entries(exc.__traceback__)
    lines = [tb.tb_lineno for tb in entries if _file(tb) == site.filename]
    if not lines and rerun is not None:
        try:
            rerun(*args)
        except type(exc) as again:
            lines = [tb.tb_lineno for tb in _entries(again.__traceback__)
                     if _file(tb) == site.filename]
        except Exception:       # something else fails first as Python: no line to name
            pass
    origin = site.origin(lines[-1]) if lines else None
    where = f"the derivative of {site.function}"
    if origin is not None:
        exc.add_note(f"raised in {where}, at the code generated for `{origin}` "
                     f"(File \"{site.user_file}\", line {origin.lineno})")
    elif lines or rerun is not None:
        exc.add_note(f"raised in {where} (generated code, {site.filename})")
    else:
        return False
    return all(_file(tb) == site.filename or in_library(_file(tb)) for tb in entries[1:])
