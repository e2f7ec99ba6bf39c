"""Deterministic, readable fresh names, and the names of the helpers the generated code calls."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


def identifier(text: str) -> str:
    """``text`` made a Python name for generated code: each character that cannot be
    in a name an underscore, ``f_`` before one that does not start with a letter
    (``grad(f)_vjp`` gives ``grad_f__vjp``)."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
    return out if out[:1].isalpha() else f"f_{out}"


class Names:
    """Deterministic fresh names that avoid every name already in use."""

    def __init__(self, used: set[str]):
        self.used = set(used)
        self.counters: dict[str, int] = {}

    def fresh(self, base: str) -> str:
        n = self.counters.get(base, 0)
        while True:
            n += 1
            name = f"{base}{n}"
            if name not in self.used:
                break
        self.counters[base] = n
        self.used.add(name)
        return name

    def reserve(self, name: str) -> str:
        """``name`` itself if free, else a numbered variant."""
        if name not in self.used:
            self.used.add(name)
            return name
        return self.fresh(name + "_")


@dataclass(frozen=True)
class HelperNames:
    """The names under which the generated code calls objects that are not the
    user's names for them (pullback's run-time helpers, twins, callees): ``named``
    holds every such name and its object, ``bound`` those of them that the generated
    code's namespace must bind (the others are the user's own globals)."""

    named: Mapping = field(default_factory=dict)
    bound: Mapping = field(default_factory=dict)


class Helpers:
    """Gives each object the generated code calls one name, the same at every call.

    The user's own name when it reads that object there (``lookup(preferred)`` is
    the object and ``is_local(preferred)`` is false) and the backend calls the
    object as it is (``calls_as_is``: Numba calls a compiled copy of a plain helper,
    which the user's global cannot name), else ``preferred`` or a fresh
    variant of it, reserved in ``names`` and bound (``bound``).  Starts from the
    names given by an earlier stage (``given``), so that a later one calls an object
    by the name already chosen."""

    def __init__(self, names: Names, lookup, is_local, given: HelperNames = HelperNames(),
                 calls_as_is=lambda obj: True):
        self.names = names
        self.calls_as_is = calls_as_is
        self.lookup = lookup                # name -> the object the user's code sees there
        self.is_local = is_local            # name -> whether the function assigns it
        self.bound: dict[str, object] = dict(given.bound)
        self._named: dict[str, object] = dict(given.named)
        self._alias: dict[int, str] = {id(obj): name for name, obj in given.named.items()}

    def name(self, obj, preferred: str) -> str:
        key = id(obj)
        if key not in self._alias and self.lookup(preferred) is obj \
                and not self.is_local(preferred) and self.calls_as_is(obj):
            # The user's own global of that name is this object: read it as they do.
            self._alias[key] = preferred
            self._named[preferred] = obj
        if key not in self._alias:
            name = preferred if preferred not in self.names.used else self.names.fresh(
                "_" + preferred.strip("_") + "_")
            self.names.used.add(name)
            self._alias[key] = name
            self._named[name] = obj
            self.bound[name] = obj
        return self._alias[key]

    def name_of(self, obj) -> str | None:
        """The name ``obj`` is called by, if it has one yet."""
        return self._alias.get(id(obj))

    def record(self) -> HelperNames:
        return HelperNames(dict(self._named), dict(self.bound))
