"""A mock-LLM responder that answers the first `answered` requests and holds every later one until
released: a test that kills a run mid-way waits for the hold (an outcome, with a generous
deadline) instead of racing a timer, so the kill lands at the same point on a loaded machine."""

from __future__ import annotations

import threading
from typing import Any, Callable

DEADLINE_S = 60.0


class HoldAfter:
    def __init__(self, responder: Callable[[dict[str, Any], int], dict[str, Any]], answered: int) -> None:
        self.responder = responder
        self.answered = answered
        self.seen = 0  # requests that reached the responder, held ones included
        self._lock = threading.Lock()
        self._held = threading.Event()
        self._released = threading.Event()

    def __call__(self, body: dict[str, Any], call_index: int) -> dict[str, Any]:
        with self._lock:
            self.seen += 1
            hold = self.seen > self.answered and not self._released.is_set()
        if hold:
            self._held.set()
            self._released.wait(DEADLINE_S)
        return self.responder(body, call_index)

    def wait_until_held(self, alive: Callable[[], bool] = lambda: True) -> bool:
        """True once a request is held; False if `alive()` turns false (the run ended) or the deadline passes."""
        waited = 0.0
        while waited < DEADLINE_S:
            if self._held.wait(0.05):
                return True
            if not alive():
                return self._held.is_set()
            waited += 0.05
        return False

    def release(self) -> None:
        self._released.set()
