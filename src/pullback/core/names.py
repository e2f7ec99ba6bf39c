"""Deterministic, readable fresh names."""
from __future__ import annotations


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
