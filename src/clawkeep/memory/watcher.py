"""Re-index memory files after edits while a long-running process (the gateway) is up.

Events are debounced (memorySearch.sync.watchDebounceMs, default 1.5 s): a burst of saves
costs one sync. CLI commands do not watch; they run a cheap staleness check instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer


class _Debounced(FileSystemEventHandler):
    def __init__(self, delay_s: float, action: Callable[[], None]):
        self._delay = delay_s
        self._action = action
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()

    def on_any_event(self, event: FileSystemEvent) -> None:
        path = str(event.src_path)
        if event.is_directory or not path.endswith(".md") or "/." in path.replace("\\", "/"):
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self._delay, self._action)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()


class MemoryWatcher:
    """Watch a workspace and call `on_change` once per burst of Markdown edits."""

    def __init__(self, workspace: Path, on_change: Callable[[], None], debounce_ms: int = 1500):
        workspace.mkdir(parents=True, exist_ok=True)
        self._handler = _Debounced(debounce_ms / 1000, on_change)
        self._observer = Observer()
        self._observer.schedule(self._handler, str(workspace), recursive=True)

    def start(self) -> MemoryWatcher:
        self._observer.start()
        return self

    def stop(self) -> None:
        self._handler.cancel()
        self._observer.stop()
        self._observer.join(timeout=5)


class TranscriptPoller:
    """Re-index transcripts (M6) a debounce interval after they change, while a long-running
    process is up: every `interval_ms` it compares a cheap signature of the sessions (ids,
    message counts, update times) and syncs only when it moved. Results may lag by that much."""

    def __init__(self, signature: Callable[[], object], on_change: Callable[[], None], interval_ms: int = 5000):
        self._signature = signature
        self._on_change = on_change
        self._interval = max(0.05, interval_ms / 1000)
        self._stop = threading.Event()
        self._last = signature()
        self._thread = threading.Thread(target=self._run, name="clawkeep-transcripts", daemon=True)

    def start(self) -> TranscriptPoller:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            current = self._signature()
            if current != self._last:
                self._last = current
                self._on_change()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
