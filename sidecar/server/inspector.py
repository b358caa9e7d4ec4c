"""``GET /inspect``: the live belief inspector, static files served on the sidecar's own port.

The page (``sidecar/inspector/``: plain HTML, CSS and JavaScript, shipped as package data, no
build step) connects back to the same port over WebSocket with JSON text frames, read-only
(``hello.role: "reader"``) unless a writer token is typed in or given as ``?writer=``. This module only maps the few known file names to their
bytes; any other path under ``/inspect/`` is 404, and every other path stays the health check.
"""

from __future__ import annotations

import http
from importlib import resources

from websockets.asyncio.server import ServerConnection
from websockets.http11 import Response

__all__ = ["PREFIX", "respond"]

PREFIX = "/inspect"
FILES = {
    "index.html": "text/html; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
}
_CSP = (
    "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; script-src 'self'"
)


def respond(connection: ServerConnection, path: str) -> Response | None:
    """The response for an inspector path, or None when ``path`` is not one."""
    route = path.split("?", 1)[0]
    if route != PREFIX and not route.startswith(PREFIX + "/"):
        return None
    name = route[len(PREFIX) + 1 :] or "index.html"
    if name not in FILES:
        return _reply(connection, http.HTTPStatus.NOT_FOUND, b"not found\n", "text/plain")
    body = (resources.files("sidecar") / "inspector" / name).read_bytes()
    return _reply(connection, http.HTTPStatus.OK, body, FILES[name])


def _reply(
    connection: ServerConnection, status: http.HTTPStatus, body: bytes, content_type: str
) -> Response:
    response = connection.respond(status, "")
    response.body = body
    # respond() set text/plain and length 0; Headers is a multidict, so replace them.
    del response.headers["Content-Type"]
    del response.headers["Content-Length"]
    response.headers["Content-Type"] = content_type
    response.headers["Content-Length"] = str(len(body))
    response.headers["Cache-Control"] = "no-store"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = _CSP
    return response
