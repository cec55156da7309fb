"""Settings from the environment (R2K_*), read once per process."""
from __future__ import annotations

import getpass
import os
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("r2k", appauthor=False))


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="R2K_", extra="ignore")

    # Each URL that is set replaces its embedded part.
    database_url: str | None = None
    database_owner_url: str | None = None  # migrations run as this role when set (else database_url)
    redis_url: str | None = None
    graph_url: str | None = None
    graph_user: str | None = None
    graph_password: str | None = None
    data_dir: Path = Field(default_factory=_default_data_dir)
    # The embedded servers listen on Unix sockets in the data dir only; set, each also opens a TCP
    # port on 127.0.0.1 for tools that need one, with the risk the README states (a port a dead
    # server left can be taken by any local account).
    embedded_tcp: bool = False
    user: str | None = None
    signing_key_file: Path | None = None
    # The audit trail's trust roots and checkpoints (core/audit.py). trusted_keys: a file of public
    # keys `audit verify` accepts besides the data dir's own (rotated or remote signers). A
    # checkpoint every 5000 events or 60 s: 60 s bounds how long a fresh event can be removed
    # without trace, yet a quiet system writes at most one small checkpoint a minute; 5000 events
    # keep a busy system's checkpoint near half a second of one core at 100,000 chains (about 0.1 ms
    # an event, bench/audit.py) and its delta (one line of the file) near half a megabyte.
    trusted_keys: Path | None = None
    checkpoint_events: int = Field(default=5000, ge=1)
    checkpoint_seconds: float = Field(default=60.0, gt=0)

    # LLM; no URL means the built-in extractive generator.
    llm_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_api_key: str | None = None
    llm_timeout: float = 30.0
    llm_retries: int = 2
    breaker_threshold: int = 5
    breaker_cooldown: float = 30.0

    claim_lease_seconds: int = 30 * 60
    # How long a validator may undo their last decision (core/services/undo.py), and how long a
    # skipped candidate stays passed by for the validator who skipped it (docs/architecture.md, Queues).
    undo_seconds: float = Field(default=60.0, ge=0)
    skip_seconds: int = Field(default=8 * 3600, ge=1)
    sweep_interval: int = 15  # seconds between scheduled sweeps (leases, in-flight ids, grey TTLs, lost jobs)
    retrieval_top_k: int = 5
    # Durable article tasks (core/services/tasks.py): a snapshot of a task's projection every N of its
    # events, and the AI analysis's confidence threshold for PEER_REVIEW.
    task_snapshot_events: int = Field(default=20, ge=1)
    task_confidence_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    connect_timeout: float = 3.0

    @property
    def acting_user(self) -> str:
        return self.user or os.environ.get("USER") or getpass.getuser()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def mask_url(url: str) -> str:
    """The URL with its password replaced by ***, for messages and status lines."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    userinfo = netloc[0].split(":", 1)[0] + ":***"
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{netloc[1]}"))
