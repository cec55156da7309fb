"""A progress bar for long commands, on stderr and only on a terminal."""
from __future__ import annotations


class Progress:
    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._progress = None
        self._task = None

    def start(self, description: str, total: int | None) -> "Progress":
        if self.enabled:
            # Here, not at the top: rich's progress (96 ms, python -X importtime) only for a bar shown.
            from rich import console, progress

            # Plain text, not markup: a description may name a file, and a file name may hold "[".
            self._progress = progress.Progress(progress.TextColumn("{task.description}", markup=False),
                                               progress.BarColumn(), progress.MofNCompleteColumn(),
                                               progress.TimeRemainingColumn(),
                                               console=console.Console(stderr=True), transient=True)
            self._progress.start()
            self._task = self._progress.add_task(description, total=total)
        return self

    def advance(self, step: int = 1, description: str | None = None) -> None:
        if self._progress is not None:
            self._progress.update(self._task, advance=step, **({"description": description} if description else {}))

    def update(self, completed: int, total: int | None = None, description: str | None = None) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=completed, total=total,
                                  **({"description": description} if description else {}))

    def stop(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
