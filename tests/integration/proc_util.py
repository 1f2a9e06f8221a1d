"""Helper processes the tests start beside profstore (a real Prometheus in prom_util.py, gotarget in
scrape_util.py): stopped or killed by the test, and killed at exit when a test left one running.

    ChildProcess                  base: self.proc (a subprocess.Popen, or None before start);
                                  track() once started, stop(timeout) (SIGTERM, then SIGKILL after
                                  timeout s; STOP_TIMEOUT by default), kill()
"""

from __future__ import annotations

import atexit
import signal
import subprocess
from typing import List, Optional


class ChildProcess:
    STOP_TIMEOUT = 10.0
    proc: Optional[subprocess.Popen] = None

    def track(self) -> None:
        """Kill this process at exit if it still runs then."""
        if self not in _live:
            _live.append(self)

    def stop(self, timeout: Optional[float] = None) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(self.STOP_TIMEOUT if timeout is None else timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self in _live:
            _live.remove(self)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self in _live:
            _live.remove(self)


_live: List[ChildProcess] = []


def _kill_all():
    for p in list(_live):
        p.kill()


atexit.register(_kill_all)
