"""Settings from the environment (R2K_*), read once per process.

Every number and path is checked against its range when the settings are first read, which every
entry point (CLI, workstation, workers, servers) does before it starts anything (docs/architecture.md,
"Settings"): a value out of range (a word, NaN, an infinity, a negative, zero where it means nothing,
an absurd size, a FIFO for a file) is a 400 whose one line names the variable and its range, exit 6.
"""
from __future__ import annotations

import getpass
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit, urlunsplit

import platformdirs
from pydantic import AfterValidator, BeforeValidator, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from .domain import files, limits
from .errors import InvalidInput

MINUTE, HOUR, DAY = 60, 3600, 86400
PATH_BYTES = 4096  # PATH_MAX on Linux: a longer path cannot be opened


def _given(value):
    """A path as given: not empty (pathlib makes '' the working directory) and not over PATH_BYTES."""
    if isinstance(value, str):
        if not value.strip():
            raise ValueError("an empty path")
        size = len(os.fsencode(value))
        if size > PATH_BYTES:
            raise ValueError(f"a path of {size:,} bytes")
    return value


def _file_if_there(path: Path) -> Path:
    kind = files.kind_at(path)
    if kind not in (None, "a regular file"):
        raise ValueError(kind)
    return path


def _folder_if_there(path: Path) -> Path:
    kind = files.kind_at(path)
    if kind not in (None, "a folder"):
        raise ValueError(kind)
    return path


# A file r2k reads (or makes) and a folder it keeps its servers in: each a path of that, if it exists.
# Their fields say which in their description, which `allowed` reads.
FileSetting = Annotated[Path, BeforeValidator(_given), AfterValidator(_file_if_there)]
FolderSetting = Annotated[Path, BeforeValidator(_given), AfterValidator(_folder_if_there)]


def _whole(default: int, low: int, high: int, unit: str = ""):
    return Field(default=default, ge=low, le=high, description=unit)


def _finite(default: float, low: float, high: float, unit: str = "", *, above: bool = False):
    """A finite float in [low, high], or (low, high] when `above`."""
    return Field(default=default, ge=None if above else low, gt=low if above else None, le=high,
                 allow_inf_nan=False, description=unit)


def _default_data_dir() -> Path:
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
    data_dir: FolderSetting = Field(default_factory=_default_data_dir, description="a folder")
    # The embedded servers listen on Unix sockets in the data dir only; set, each also opens a TCP
    # port on 127.0.0.1 for tools that need one, with the risk the README states (a port a dead
    # server left can be taken by any local account).
    embedded_tcp: bool = False
    user: str | None = None
    signing_key_file: FileSetting | None = Field(default=None, description="a regular file")
    # The audit trail's trust roots and checkpoints (core/audit/). trusted_keys: a file of public
    # keys `audit verify` accepts besides the data dir's own (rotated or remote signers). A
    # checkpoint every 5000 events or 60 s: 60 s bounds how long a fresh event can be removed
    # without trace, yet a quiet system writes at most one small checkpoint a minute; 5000 events
    # keep a busy system's checkpoint near half a second of one core at 100,000 chains (about 0.1 ms
    # an event, bench/audit.py) and its delta (one line of the file) near half a megabyte.
    trusted_keys: FileSetting | None = Field(default=None, description="a regular file")
    checkpoint_events: int = _whole(5000, 1, 1_000_000, "events")
    checkpoint_seconds: float = _finite(60.0, 0, DAY, "seconds", above=True)

    # LLM; no URL means the built-in extractive generator.
    llm_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    llm_api_key: str | None = None
    llm_timeout: float = _finite(30.0, 0, HOUR, "seconds", above=True)
    llm_retries: int = _whole(2, 0, 10)
    breaker_threshold: int = _whole(5, 1, 1000, "failures")
    breaker_cooldown: float = _finite(30.0, 0, DAY, "seconds")
    # With an LLM URL, extraction's candidates are refined on a worker: the LLM proposes each one's
    # question, claim and Horn type, checked, else the deterministic one stays (core/services/answering/refine.py).
    # On by default: whoever configures an LLM asks for its use, and the fallback keeps every
    # candidate it cannot improve; off keeps extraction deterministic with an LLM still generating.
    llm_extraction: bool = True
    llm_extraction_batch: int = _whole(8, 1, 50, "statements")

    # Embeddings (docs/architecture.md, "Retrieval"): no URL means the static model shipped in the
    # wordllama wheel, run in process; a URL names any OpenAI-compatible /v1/embeddings endpoint,
    # reached through httpx and a breaker of its own, as the LLM is.
    embeddings_url: str | None = None
    embeddings_model: str | None = None  # the endpoint's model (required with a URL); recorded with the index
    embeddings_api_key: str | None = None
    embeddings_timeout: float = _finite(10.0, 0, HOUR, "seconds", above=True)
    embeddings_retries: int = _whole(1, 0, 10)

    claim_lease_seconds: int = _whole(30 * MINUTE, 1, 7 * DAY, "seconds")
    # How long a validator may undo their last decision (core/services/queue/undo.py), and how long a
    # skipped candidate stays passed by for the validator who skipped it (docs/architecture.md, Queues).
    undo_seconds: float = _finite(60.0, 0, DAY, "seconds")
    skip_seconds: int = _whole(8 * HOUR, 1, 30 * DAY, "seconds")
    # Seconds between scheduled sweeps (leases, in-flight ids, grey TTLs, lost jobs).
    sweep_interval: int = _whole(15, 1, HOUR, "seconds")
    retrieval_top_k: int = _whole(5, 1, 100, "sources")
    # Durable article tasks (core/services/tasks/): a snapshot of a task's projection every N of its
    # events, and the AI analysis's confidence threshold for PEER_REVIEW.
    task_snapshot_events: int = _whole(20, 1, 10_000, "events")
    task_confidence_threshold: float = _finite(0.8, 0.0, 1.0)
    # psycopg counts a connect timeout in whole seconds, at least one.
    connect_timeout: float = _finite(3.0, 1, 5 * MINUTE, "seconds")
    # `serve ssh`: a session with no key pressed this long ends (its --idle overrides).
    ssh_idle_seconds: int = _whole(30 * MINUTE, *limits.SSH_IDLE, "seconds")

    @property
    def acting_user(self) -> str:
        return self.user or os.environ.get("USER") or getpass.getuser()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """This process's settings; one out of its range is a 400 naming it (`setting_error_said`)."""
    try:
        return Settings()
    except ValidationError as exc:
        raise InvalidInput(setting_error_said(exc)) from None


def allowed(name: str) -> str:
    """A setting's range in words: "a whole number of seconds, 1–604,800", "the path of a folder, …"."""
    field = Settings.model_fields[name]
    unit = field.description or ""
    if unit in ("a regular file", "a folder"):
        return f"the path of {unit}, at most {PATH_BYTES:,} bytes"
    if field.annotation is bool:  # R2K_EMBEDDED_TCP, R2K_LLM_EXTRACTION
        return "true or false (also 1 or 0, yes or no, on or off)"
    bounds = {type(m).__name__: m for m in field.metadata}
    kind = "a whole number" if field.annotation is int else "a finite number"
    high = _number(bounds["Le"].le)
    if "Gt" in bounds:
        span = f"more than {_number(bounds['Gt'].gt)}, at most {high}"
    else:
        span = f"{_number(bounds['Ge'].ge)}–{high}"
    return f"{kind}{f' of {unit}' if unit else ''}, {span}"


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def setting_error_said(error: ValidationError) -> str:
    """The first setting pydantic refused, in one line: its variable, its range, what it was given
    (and which others were refused too)."""
    refused: dict[str, dict] = {}
    for problem in error.errors():
        name = str(problem["loc"][0]) if problem["loc"] else ""
        if name in Settings.model_fields:
            refused.setdefault(name, problem)
    if not refused:
        return f"the R2K_* settings are not valid: {error.errors()[0]['msg']}"
    (name, problem), *others = refused.items()
    given = repr(problem.get("input"))
    given = given if len(given) <= 40 else given[:39] + "…"
    found = problem.get("ctx", {}).get("error") if problem["type"] == "value_error" else None
    line = f"R2K_{name.upper()} is {allowed(name)}; got {given}" + (f", {found}" if found else "")
    if others:
        line += (f" ({', '.join(f'R2K_{n.upper()}' for n, _ in others)} "
                 f"{'is' if len(others) == 1 else 'are'} out of range too)")
    return line


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
