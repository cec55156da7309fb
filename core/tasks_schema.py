"""The JSON Schemas (draft 2020-12) of durable tasks, shipped as package data in core/schemas/: the
transition request, and the payload of each typed event (docs/architecture.md, "Durable tasks").

`check_request` is the first thing a transition does: a malformed request is a 400 naming the field.
`check_event` runs on every event before it is committed.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .errors import InvalidInput

SCHEMAS = Path(__file__).resolve().parent / "schemas"


@lru_cache(maxsize=None)
def validator(name: str):
    from jsonschema import Draft202012Validator

    schema = json.loads((SCHEMAS / f"{name}.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


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
    message = error.message
    return message if len(message) <= 200 else message[:199] + "…"


def problems(name: str, document) -> list[str]:
    """Every schema violation of `document`, each naming its field; [] when it conforms."""
    errors = sorted(validator(name).iter_errors(document), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    return [f"{_where(e)} {_said(e)}" for e in errors]


def check_request(request) -> None:
    """The transition request against transition_request.json: 400 naming the first bad field."""
    found = problems("transition_request", request)
    if found:
        raise InvalidInput(f"invalid transition request: {found[0]}"
                           + (f" (and {len(found) - 1} more)" if len(found) > 1 else ""))


def check_event(event_type: str, payload: dict) -> None:
    """An event's payload against its type's schema, before it is committed."""
    found = problems(f"event_{event_type}", payload)
    if found:
        raise InvalidInput(f"a {event_type} event would not conform to its schema: {found[0]}")
