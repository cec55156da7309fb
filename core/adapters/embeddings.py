"""Embedders: texts to vectors, for retrieval by meaning (docs/architecture.md, "Retrieval").

- `StaticEmbedder`, the default: wordllama's `l2_supercat` model (256 dimensions), a static embedding
  table averaged over a text's tokens, run in process. Its weights and tokenizer ship inside the
  wordllama wheel. wordllama 0.4 looks for the tokenizer under `tokenizer/` in its package while the
  wheel has it under `tokenizers/`, and then downloads it; with its cache dir set to the package's own
  folder and downloads disabled it finds both shipped files, so nothing is ever fetched.
- `EndpointEmbedder`: any OpenAI-compatible `/v1/embeddings` endpoint through httpx, with timeouts,
  bounded retries and a circuit breaker in Redis of its own, as the LLM has.

Both return unit-length vectors (cosine is then a dot product) as lists of floats.
"""
from __future__ import annotations

import logging
import math
import threading
from pathlib import Path

from .http import post_with_retries

log = logging.getLogger(__name__)

STATIC_MODEL = "wordllama/l2_supercat-256"
STATIC_DIMENSION = 256
# A text is embedded from its first MAX_CHARS: averaging a static model's vectors over more says
# little more, and a batch pads every text to its longest one.
MAX_CHARS = 6000
BATCH = 64
BREAKER_KEY = "raw_to_knowledge:embeddings_breaker"


class EmbeddingsError(Exception):
    """The embedder failed; `detail` says how, in words for a log line or a status."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


def unit(vector) -> list[float]:
    """The vector at length 1; a text with no token the model knows (a zero vector, whose cosine is
    undefined) becomes the first axis, near nothing in particular."""
    vector = [0.0 if not math.isfinite(x) else float(x) for x in vector]
    norm = math.sqrt(sum(x * x for x in vector))
    if not norm:
        return [1.0] + [0.0] * (len(vector) - 1)
    return [x / norm for x in vector]


def literal(vector: list[float]) -> str:
    """A vector as pgvector's text input, `[x, y, …]` (a list's own repr: formatted in C)."""
    return repr(vector)


_LOAD = threading.Lock()
_STATIC = None


def _wordllama():
    """The shipped model, loaded once per process. wordllama's package import calls
    logging.basicConfig, which would put a stderr handler on the root logger of the CLI and of the
    workstation (whose terminal Textual holds): a handler is there while it imports, so that call
    does nothing."""
    global _STATIC
    with _LOAD:
        if _STATIC is None:
            root = logging.getLogger()
            guard = logging.NullHandler()
            root.addHandler(guard)
            try:
                # Imported here: numpy, tokenizers and the weights cost a command that embeds nothing
                # about 0.4 s.
                import wordllama
            finally:
                root.removeHandler(guard)
            _STATIC = wordllama.WordLlama.load(config="l2_supercat", dim=STATIC_DIMENSION,
                                     cache_dir=Path(wordllama.__file__).parent, disable_download=True)
        return _STATIC


class StaticEmbedder:
    """wordllama's shipped model, in process. Never fails on text; never reaches the network."""

    model = STATIC_MODEL
    dimension = STATIC_DIMENSION

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = _wordllama()
        clipped = [t[:MAX_CHARS] if t.strip() else "-" for t in texts]
        # Shortest first, so each batch pads to a length near its own.
        order = sorted(range(len(clipped)), key=lambda i: len(clipped[i]))
        out: list[list[float] | None] = [None] * len(clipped)
        for start in range(0, len(order), BATCH):
            chosen = order[start:start + BATCH]
            vectors = model.embed([clipped[i] for i in chosen], norm=True, batch_size=BATCH)
            for i, vector in zip(chosen, vectors.tolist()):
                # Normed by the model; a text of no known token came out as NaNs.
                out[i] = vector if vector[0] == vector[0] else unit(vector)
        return out  # type: ignore[return-value]

    def close(self) -> None:
        pass


class EndpointEmbedder:
    """An OpenAI-compatible `/v1/embeddings` endpoint. Its dimension is what it answers with (learned
    from the first answer, or asked for by `probe`)."""

    def __init__(self, url: str, model: str, api_key: str | None, timeout: float, retries: int, breaker):
        import httpx

        base = url.rstrip("/")
        if not base.endswith("/embeddings"):
            base = base + ("/embeddings" if base.endswith("/v1") else "/v1/embeddings")
        self.endpoint = base
        self.model = model
        self.retries = max(0, retries)
        self.breaker = breaker
        self.dimension: int | None = None
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)), headers=headers)

    def probe(self) -> int:
        """The endpoint's dimension, asked for with one short text when no answer told it yet."""
        if self.dimension is None:
            self.embed(["dimension"])
        return self.dimension  # type: ignore[return-value]

    def embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        if self.breaker.allow("embeddings") == "refuse":
            raise EmbeddingsError("embeddings circuit open")
        out: list[list[float]] = []
        try:
            for start in range(0, len(texts), BATCH):
                out += self._call([t[:MAX_CHARS] or "-" for t in texts[start:start + BATCH]])
        except EmbeddingsError as exc:
            self.breaker.record_failure(exc.detail)
            raise
        self.breaker.record_success()
        return out

    def _call(self, texts: list[str]) -> list[list[float]]:
        response = post_with_retries(self._http, self.endpoint, {"model": self.model, "input": texts}, self.retries,
                                     EmbeddingsError)
        return self._vectors(response, len(texts))

    def _vectors(self, response, count: int) -> list[list[float]]:
        try:
            data = sorted(response.json()["data"], key=lambda d: d["index"])
            vectors = [[float(x) for x in d["embedding"]] for d in data]
        except (ValueError, KeyError, TypeError, AttributeError):
            raise EmbeddingsError("malformed response (no data[].embedding)") from None
        if len(vectors) != count:
            raise EmbeddingsError(f"asked for {count} embeddings, got {len(vectors)}")
        lengths = {len(v) for v in vectors}
        if len(lengths) != 1 or not 0 < next(iter(lengths)) <= 2000:
            raise EmbeddingsError(f"embeddings of unusable dimensions {sorted(lengths)[:3]}")
        dimension = lengths.pop()
        if self.dimension is not None and dimension != self.dimension:
            raise EmbeddingsError(f"the endpoint answered {dimension} dimensions after {self.dimension}")
        self.dimension = dimension
        return [unit(v) for v in vectors]

    def close(self) -> None:
        self._http.close()
