"""A TCP forwarder a test can close and reopen: PostgreSQL or Redis "going away" as a network
fault or a restarted container makes it go away, while the real server behind it, which
other tests use, keeps running."""

import socket
import threading
from contextlib import suppress


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Forwarder:
    """Listens on 127.0.0.1:`port` (chosen when made) and pipes each connection to `upstream`.

    `open()` listens (again, on the same port); `close()` is the outage: no new connection is
    taken and every open one is cut, so a client sees connections refused and cut.
    """

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.port = free_port()
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def url(self, scheme: str, path: str = "") -> str:
        """`scheme://127.0.0.1:port/path`: e.g. url("redis", "15")."""
        return f"{scheme}://127.0.0.1:{self.port}/{path}"

    def open(self) -> "Forwarder":
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def close(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked on it; close() alone would not
            listener.close()
        with self._lock:
            sockets, self._open = self._open, set()
        for sock in sockets:
            with suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._open.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
