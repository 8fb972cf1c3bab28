"""A stdlib HTTP server that runs in a daemon thread and stops promptly, even with requests in flight."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# what socketserver hands a server's hooks (typeshed's alias is private); a TCP server is given the socket itself
_Request = socket.socket | tuple[bytes, socket.socket]

class _TrackingHTTPServer(ThreadingHTTPServer):
    """Threading server that remembers its open connections so that stop() can cut idle keep-alives."""

    daemon_threads = True
    block_on_close = False  # never wait for handler threads: a hanging handler must not block stop()
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], app: Any):
        self.app = app
        self.stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def process_request(self, request: _Request, client_address: Any) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: _Request) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: _Request, client_address: Any) -> None:
        # Clients (Chromium, timed-out test clients) drop connections all the time; that is not an error here.
        pass

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
            self._connections.clear()
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class QuietHandler(BaseHTTPRequestHandler):
    """Request handler base: HTTP/1.1, no request logging, small helpers for replies."""

    protocol_version = "HTTP/1.1"
    server: _TrackingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def app(self) -> Any:
        return self.server.app

    def send_body(self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def wait_until_stopped(self) -> None:
        """Block this request until the server stops, then drop the connection without a reply."""
        self.server.stopping.wait()
        self.close_connection = True

    def read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""


class BackgroundServer:
    """One ThreadingHTTPServer on host:port (0 = any free port) serving in a daemon thread."""

    def __init__(self, handler: type[QuietHandler], app: Any, host: str = "127.0.0.1", port: int = 0,
                 name: str = "http"):
        self._handler = handler
        self._app = app
        self._host = host
        self._port = port
        self._name = name
        self._httpd: _TrackingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError(f"{self._name} server is not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://{self._host}:{self.port}"

    def start(self) -> None:
        if self._httpd is not None:
            return
        self._httpd = _TrackingHTTPServer((self._host, self._port), self._handler, self._app)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"om2w-offline-{self._name}",
            daemon=True,
        )
        self._thread.start()

    def stop(self) -> None:
        httpd, thread = self._httpd, self._thread
        self._httpd, self._thread = None, None
        if httpd is None:
            return
        httpd.stopping.set()  # releases handlers that hang on purpose
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=2)
