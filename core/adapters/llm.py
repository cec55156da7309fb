"""The LLM: any OpenAI-compatible `/v1/chat/completions` endpoint through httpx, with timeouts and
bounded retries. (Without an endpoint, generation uses core/services/search/extractive.py.)
"""
from __future__ import annotations

from dataclasses import dataclass

from .http import post_with_retries


class LLMError(Exception):
    """The endpoint failed; `detail` is what the work item's escalation reason will say."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


@dataclass
class Generation:
    text: str
    model: str


SYSTEM_PROMPT = (
    "You write answers for a validated knowledge registry. Answer the question using only the numbered "
    "sources. Cite every statement with the number of its source in square brackets, like [1] or [2][3]. "
    "If the sources do not settle the question, say so plainly. No preamble; at most 120 words.")


def build_prompt(question: str, sources: list[dict], rework_reason: str | None = None,
                 escalation_reason: str | None = None) -> str:
    """The user message: the question, why it was escalated (the validator's words, when it was),
    the numbered sources each with its document title and section heading, and a rework reason."""
    lines = [f"Question: {question}"]
    if escalation_reason:
        lines.append(f"Why a validator escalated it: {escalation_reason}")
    lines += ["", "Sources:"]
    for number, source in enumerate(sources, start=1):
        label = " \u203a ".join(part for part in (source["title"], source.get("heading")) if part)
        lines.append(f"[{number}] ({label}) {source['text']}")
    if rework_reason:
        lines += ["", f"A reviewer rejected the previous answer: {rework_reason}. Address that."]
    lines += ["", "Answer, grounded in the sources above and citing them:"]
    return "\n".join(lines)


class ChatClient:
    def __init__(self, url: str, model: str, api_key: str | None, timeout: float, retries: int):
        import httpx

        base = url.rstrip("/")
        if not base.endswith("/chat/completions"):
            base = base + ("/chat/completions" if base.endswith("/v1") else "/v1/chat/completions")
        self.endpoint = base
        self.model = model
        self.retries = max(0, retries)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)), headers=headers)

    def complete(self, prompt: str, *, system: str = SYSTEM_PROMPT) -> Generation:
        """One chat completion: `system` is generation's instructions unless a caller (extraction's
        proposals, core/services/answering/refine.py) gives its own."""
        body = {"model": self.model, "temperature": 0.2,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]}
        response = post_with_retries(self._http, self.endpoint, body, self.retries, LLMError)
        try:
            data = response.json()
            text = data["choices"][0]["message"]["content"].strip()
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise LLMError("malformed response (no choices[0].message.content)") from None
        if not text:
            raise LLMError("empty answer")
        return Generation(text=text, model=data.get("model") or self.model)

    def close(self) -> None:
        self._http.close()
