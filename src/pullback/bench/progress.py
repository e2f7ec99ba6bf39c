"""A progress bar on stderr: tqdm when it is installed, plain numbered lines otherwise."""
from __future__ import annotations

import sys


class Progress:
    def __init__(self, total: int, enabled: bool = True):
        self.total, self.done, self.enabled = total, 0, enabled
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(total=total, file=sys.stderr, unit="run", dynamic_ncols=True, leave=False)

    def step(self, label: str):
        """Announce the next task; the previous one is finished."""
        if self.bar is not None:
            if self.done:
                self.bar.update(1)
            self.bar.set_description_str(label[:60])
        elif self.enabled:
            print(f"[{self.done + 1}/{self.total}] {label}", file=sys.stderr, flush=True)
        self.done += 1

    def close(self):
        if self.bar is not None:
            self.bar.update(1 if self.done else 0)
            self.bar.close()
