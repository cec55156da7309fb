"""The JSON Schemas (draft 2020-12) of durable tasks, shipped as package data in core/schemas/: the
transition request, and the payload of each typed event (docs/architecture.md, "Durable tasks").

`check_request` is the first thing a transition does: a malformed request is a 400 naming the field,
and so is text the event log cannot hold (a NUL, a lone surrogate) anywhere in it. `check_event` runs
on every event before it is committed. A schema's "number" is a finite one: NaN and the infinities
(which Python's json reads, and which compare false with every bound) are not numbers here.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

from .domain.limits import refused_in
from .errors import InvalidInput

SCHEMAS = Path(__file__).resolve().parent / "schemas"


@lru_cache(maxsize=1)
def _finite_validator():
    """Draft 2020-12 with "number" (and so "integer") meaning a finite number. jsonschema is imported
    here, on first use: 138 ms (python -X importtime) that only a command checking a task's body pays."""
    from jsonschema import Draft202012Validator, validators

    draft = Draft202012Validator.TYPE_CHECKER

    def finite_number(checker, instance) -> bool:
        return draft.is_type(instance, "number") and not (isinstance(instance, float) and not math.isfinite(instance))

    return validators.extend(Draft202012Validator, type_checker=draft.redefine("number", finite_number))


@lru_cache(maxsize=None)
def validator(name: str):
    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    checking = _finite_validator()
    checking.check_schema(schema)
    return checking(schema)


def _where(error) -> str:
    """The field an error is about, as a path: `metadata.reviewer_ids[1]`, or the missing property."""
    path = ""
    for part in error.absolute_path:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in (error.instance or {})]
        if missing:
            return f"{path}.{missing[0]}" if path else missing[0]
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        if extra:
            return f"{path}.{extra[0]}" if path else extra[0]
    return path or "(the request)"


def _said(error) -> str:
    if error.validator == "required":
        return "is required"
    if error.validator == "additionalProperties":
        return "is not a known field"
    if error.validator == "enum":
        return f"must be one of {', '.join(str(v) for v in error.validator_value)}"
    if error.validator == "type" and isinstance(error.instance, float) and not math.isfinite(error.instance):
        return f"must be a finite number, got {error.instance!r}"
    if error.validator == "uniqueItems":
        twice = _repeated(error.instance)
        if twice is not None:
            return f"lists {twice!r} twice: each once"
    message = error.message
    return message if len(message) <= 200 else message[:199] + "…"


def _repeated(items: list) -> object:
    """The first item of a list that an earlier one equals, or None (one pass: a list may be long)."""
    seen = set()
    for item in items:
        key = json.dumps(item, sort_keys=True, default=repr)
        if key in seen:
            return item
        seen.add(key)
    return None


def problems(name: str, document) -> list[str]:
    """Every schema violation of `document`, each naming its field; [] when it conforms."""
    errors = sorted(validator(name).iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    return [f"{_where(e)} {_said(e)}" for e in errors]


def check_request(request) -> None:
    """The transition request against transition_request.json: 400 naming the first bad field."""
    found = problems("transition_request", request)
    unstorable = refused_in(request)
    if unstorable and not found:
        found = [unstorable]
    if found:
        raise InvalidInput(f"invalid transition request: {found[0]}"
                           + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))


def check_event(event_type: str, payload: dict) -> None:
    """An event's payload against its type's schema, before it is committed."""
    found = problems(f"event_{event_type}", payload)
    if found:
        raise InvalidInput(f"a {event_type} event would not conform to its schema: {found[0]}")
