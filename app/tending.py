"""The workstation's own worker and its unattended sweep (docs/architecture.md, "Jobs without
asking"): started when no worker is live, started again when it ends, stopped when the
workstation leaves, however it leaves (ctrl+q, SIGTERM, SIGHUP)."""
from __future__ import annotations

import asyncio
import signal

from textual import work

from r2k.core.services.operations import sweeps
from r2k.core.services.session import notice

from .messages import WorkerChildChanged
from .workstation_log import log_failure


class WorkerTending:
    """Mixed into the workstation's App: `worker_child` (app/worker_child.py) is set on mount when
    the workstation starts one; `_sweep_every` is the unattended sweep's interval."""

    @work(thread=True, group="worker-child", exit_on_error=False)
    def tend_worker(self) -> None:
        """Start the workstation's own worker when none is live; start it again when it ended."""
        child = self.worker_child
        if child is None or self.actor is None:
            return  # it acts as the workstation's user: once known (an unknown one starts none)
        child.user = self.actor.name
        try:
            changed = child.tick(self.ctx)
        except Exception as exc:  # noqa: BLE001 - Redis away: the screens say so; look again next time
            log_failure(self.ctx, "looking after the workstation's worker", exc)
            return
        if changed:
            self.post_message(WorkerChildChanged())

    def on_worker_child_changed(self, _: WorkerChildChanged) -> None:
        self._broadcast(notice("worker"))

    def _handle_signals(self) -> None:
        """SIGTERM and SIGHUP (the terminal closed) leave as ctrl+q's last step does: the workstation's
        own worker stopped, the terminal restored."""
        loop = asyncio.get_running_loop()

        def leave(signum: int) -> None:
            self.stop_worker()
            self.exit(return_code=128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, leave, sig)

    def worker_status(self) -> dict | None:
        """The workstation's own worker as the dashboard says it (None: this workstation starts none)."""
        if self.worker_child is not None:
            return self.worker_child.status()
        return {"state": "off"} if self.worker_opted_out else None

    def stop_worker(self) -> None:
        """Stop the workstation's own worker (leaving; also run by run_tui after a crash)."""
        if self.worker_child is not None:
            self.worker_child.stop()

    @work(thread=True, group="sweep", exclusive=True)
    def sweep_if_unattended(self) -> None:
        """Expired leases and the like, when no worker is running to sweep them (a demo, say)."""
        try:
            sweeps.sweep_if_unattended(self.ctx, self._sweep_every)
        except Exception as exc:  # noqa: BLE001 - a service down: the screens say so; try again next time
            log_failure(self.ctx, "the unattended sweep (expired leases and the like) did not run", exc)
