"""One POST to an OpenAI-compatible endpoint (chat completions, embeddings), with bounded retries:
a timeout, a transport error, a 429 or a 5xx is tried again after 0.5 s, 1 s, 2 s … (at most 4 s);
another 4xx is final. The callers' breakers count what this finally raises."""
from __future__ import annotations

import time


def post_with_retries(http, endpoint: str, body: dict, retries: int, error: type[Exception]):
    """The endpoint's answer to `body` (status below 400), or `error(detail)`: the last failure, in
    words for an escalation reason or a log line."""
    import httpx

    last = "no attempt"
    for attempt in range(max(0, retries) + 1):
        if attempt:
            time.sleep(min(0.5 * 2 ** (attempt - 1), 4.0))
        try:
            response = http.post(endpoint, json=body)
        except httpx.TimeoutException:
            last = "timeout"
            continue
        except httpx.HTTPError as exc:
            last = f"{type(exc).__name__}: {exc}"[:200]
            continue
        if response.status_code >= 500 or response.status_code == 429:
            last = f"HTTP {response.status_code}"
            continue
        if response.status_code >= 400:
            raise error(f"HTTP {response.status_code}: {response.text[:200]}")
        return response
    raise error(last)
