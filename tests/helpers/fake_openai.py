"""A scriptable OpenAI-compatible server on 127.0.0.1 (``/v1/chat/completions`` and
``/v1/completions``) for the HTTP judges' and generators' tests."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted response: status, body (dict → JSON, str/bytes raw), headers, delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def completion(content: Any) -> dict[str, Any]:
    """A chat-completion body whose message content is ``content``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }


def text_completion(content: Any) -> dict[str, Any]:
    """A ``/v1/completions`` body whose text is ``content``."""
    return {
        "id": "cmpl-test",
        "object": "text_completion",
        "choices": [{"index": 0, "text": content, "finish_reason": "stop"}],
    }


def default_answer(prompt: str) -> str:
    """ "Yes." when the claim contains SUPPORTED (or the answer RELEVANT), else "No."."""
    for line in prompt.splitlines():
        if (line.startswith("Claim:") and "SUPPORTED" in line) or (
            line.startswith("Answer:") and "RELEVANT" in line
        ):
            return "Yes."
    return "No."


@dataclass
class FakeServer:
    url: str
    requests: list[dict[str, Any]]
    script: list[Reply]
    answer: Callable[[str], str]
    listings: list[dict[str, Any]] = field(default_factory=list)  # GET /v1/models asked

    @property
    def count(self) -> int:
        return len(self.requests)


@contextmanager
def serve(
    script: list[Reply] | None = None,
    answer: Callable[[str], str] = default_answer,
    *,
    models: list[str] | None = None,
) -> Iterator[FakeServer]:
    """Run the server in a thread; scripted replies are used first, then ``answer``. With
    ``models``, ``GET /v1/models`` lists them (as OpenAI and llama.cpp's server do); without,
    a GET is answered 501, as by a server that lists none."""
    state = FakeServer("", [], list(script or []), answer)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # silence stderr
            pass

        def do_GET(self) -> None:
            with lock:
                state.listings.append({"path": self.path, "headers": dict(self.headers.items())})
            if models is None or not self.path.endswith("/v1/models"):
                self.send_error(501)
                return
            payload = json.dumps(
                {"object": "list", "data": [{"id": m, "object": "model"} for m in models]}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", 0))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            with lock:
                state.requests.append(
                    {"path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
                reply = state.script.pop(0) if state.script else None
            if reply is None and self.path.endswith("/v1/completions"):
                prompt = body["prompt"] if body else ""
                reply = Reply(body=text_completion(state.answer(prompt)))
            elif reply is None:
                prompt = body["messages"][-1]["content"] if body else ""
                reply = Reply(body=completion(state.answer(prompt)))
            if reply.delay:
                time.sleep(reply.delay)
            data = reply.body
            if callable(data):
                data = data(self)
            if isinstance(data, (dict, list)):
                payload = json.dumps(data).encode()
            elif isinstance(data, str):
                payload = data.encode()
            else:
                payload = data or b""
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout tests)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
