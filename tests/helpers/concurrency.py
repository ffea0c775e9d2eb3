"""How many calls were in flight at once: for tests of a concurrency limit."""

from __future__ import annotations

import threading
import time


class InFlight:
    """Wraps calls that wait ``seconds``; ``peak`` is the most that were running at once."""

    def __init__(self, seconds: float = 0.01) -> None:
        self.seconds = seconds
        self.peak = 0
        self._active = 0
        self._lock = threading.Lock()

    def wait(self) -> None:
        """Count this call in, wait, count it out (call it from the function under test)."""
        with self._lock:
            self._active += 1
            self.peak = max(self.peak, self._active)
        time.sleep(self.seconds)
        with self._lock:
            self._active -= 1
