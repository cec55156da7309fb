"""A real local HTTP server speaking the OpenAI chat-completions API, for tests and benches.

Its `mode` says how it behaves: "answer" (at once), "slow" (after `delay` seconds), "error" (HTTP 500),
or "hang" (never answers within any sane timeout). It counts the requests it gets.
"""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatServer:
    def __init__(self, mode: str = "answer", delay: float = 1.0, reply=None):
        self.mode = mode
        self.delay = delay
        self.reply = reply  # a fixed answer, or a function of the prompt (the LLM as a judge of conflicts)
        self.calls = 0
        self.prompts: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.calls += 1
                    prompt = body.get("messages", [{}])[-1].get("content", "")
                    server.prompts.append(prompt)
                mode = server.mode
                if self.path != "/v1/chat/completions":
                    self.send_error(404)
                    return
                if mode == "error":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b'{"error": "boom"}')
                    return
                if mode == "hang":
                    server._stop.wait(600)
                    return
                if mode == "slow":
                    time.sleep(server.delay)
                cited = re.findall(r"^\[(\d+)\] \([^)]*\) (.+)$", prompt, re.M)
                text = " ".join(f"{sentence.split('. ')[0].rstrip('.')}. [{n}]" for n, sentence in cited[:2]) \
                    or "The sources do not settle this."
                if server.reply is not None:
                    text = server.reply(prompt) if callable(server.reply) else server.reply
                payload = {"id": "chatcmpl-test", "object": "chat.completion", "model": "test-model-1",
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                        "finish_reason": "stop"}]}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> "ChatServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class EmbeddingsServer:
    """A real local HTTP server speaking the OpenAI embeddings API (`POST /v1/embeddings`): each text's
    vector is its words hashed into `dimension` buckets (texts sharing words are near), from a model
    named `model`. `mode` "answer" or "error" (HTTP 500); it counts requests and texts."""

    def __init__(self, model: str = "test-embed-1", dimension: int = 16, mode: str = "answer"):
        self.model, self.dimension, self.mode = model, dimension, mode
        self.calls = 0
        self.texts: list[str] = []
        self.keys: list[str | None] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                inputs = body.get("input") or []
                inputs = [inputs] if isinstance(inputs, str) else inputs
                with server._lock:
                    server.calls += 1
                    server.texts += inputs
                    server.keys.append(self.headers.get("Authorization"))
                if self.path != "/v1/embeddings":
                    self.send_error(404)
                    return
                if server.mode == "error":
                    self.send_response(500)
                    self.end_headers()
                    self.wfile.write(b'{"error": "boom"}')
                    return
                data = [{"object": "embedding", "index": i, "embedding": server.vector(text)}
                        for i, text in enumerate(inputs)]
                payload = json.dumps({"object": "list", "data": data, "model": server.model}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def vector(self, text: str) -> list[float]:
        import hashlib

        out = [0.0] * self.dimension
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            out[int(hashlib.sha256(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        return out if any(out) else [1.0] + [0.0] * (self.dimension - 1)

    def __enter__(self) -> "EmbeddingsServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
