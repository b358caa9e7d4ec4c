"""The asyncio WebSocket server: connections, handshake, auth, fan-out, backpressure."""

from .app import ServerConfig, Sidecar, is_loopback
from .auth import Auth, Role

__all__ = ["Auth", "Role", "ServerConfig", "Sidecar", "is_loopback"]
