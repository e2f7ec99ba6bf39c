"""Counts of outcomes per backend, the failing programs, and the summary
printed at the end of the run (see conftest.py)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .grammar import Program, format_args
from .oracle import SEVERITY, Outcome

SUMMARY = "random programs"   # the name of the report property holding Tally.summary()


@dataclass
class Tally:
    backend: str
    features: frozenset[str]
    save: Path | None = None
    counts: Counter = field(default_factory=Counter)
    failures: list[tuple[Program, Outcome]] = field(default_factory=list)
    refusals: Counter = field(default_factory=Counter)
    constructs: Counter = field(default_factory=Counter)   # judged programs using each
    stopped: bool = False      # set at the first failure when not keeping going
    first_failure: int | None = None   # the number of the first failing judged program

    @property
    def judged(self) -> int:
        """Programs judged so far (all but the discarded)."""
        return sum(n for k, n in self.counts.items() if k != "discard")

    def record(self, program: Program, outcome: Outcome) -> None:
        if self.stopped:
            return             # Hypothesis is shrinking: these runs are not new programs
        self.counts[outcome.kind] += 1
        if outcome.kind != "discard":
            self.constructs.update(program.constructs)
        if outcome.kind == "refused":
            self.refusals[outcome.signature.removeprefix("refused: ")] += 1
            if self.save is not None:
                self.write(program, outcome, sum(self.refusals.values()))
        if outcome.failed:
            if self.first_failure is None:
                self.first_failure = self.judged
            self.failures.append((program, outcome))
            if self.save is not None:
                self.write(program, outcome, len(self.failures))

    def write(self, program: Program, outcome: Outcome, n: int) -> None:
        self.save.mkdir(parents=True, exist_ok=True)
        path = self.save / f"{self.backend}-{n:04d}-{outcome.kind}.py"
        path.write_text(f"# {outcome}\n# judged program {self.judged} of this run\n"
                        f"# constructs: {', '.join(sorted(program.constructs))}\n"
                        f"{program.source}\nARGS = {format_args(program.args)}\n"
                        + ("" if program.other_args is None
                           else f"OTHER_ARGS = {format_args(program.other_args)}\n"))

    def summary(self) -> str:
        parts = [f"{k} {self.counts[k]}" for k in SEVERITY[1:]]
        line = (f"{self.backend}: {self.judged} programs judged: " + ", ".join(parts)
                + f" ({self.counts['discard']} discarded)")
        if self.first_failure is not None:
            line += f"\n    first failure: judged program {self.first_failure}"
        if self.refusals:
            line += "".join(f"\n    refused {n}: {k}" for k, n in self.refusals.most_common())
        unused = sorted(self.features - set(self.constructs))
        line += "\n    constructs used: " + ", ".join(f"{k} {n}" for k, n in sorted(self.constructs.items()))
        if unused:
            line += "\n    never used: " + ", ".join(unused)
        kinds = Counter(outcome.signature for _, outcome in self.failures)
        line += "".join(f"\n    {n} x {k}" for k, n in kinds.most_common())
        return line
