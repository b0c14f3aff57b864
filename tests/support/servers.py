"""Serving a test's HTTP server from a thread."""

import threading
from socketserver import BaseServer

# How often serve_forever looks whether it was asked to stop: shutdown() waits for the next
# look, 0.5 s by default, which a server started for each test paid at every teardown
# (15 s of the monitoring page tests).
POLL_SECONDS = 0.02


def serve_in_thread(server: BaseServer) -> threading.Thread:
    """Start `server`'s serve_forever on a daemon thread; server.shutdown() stops it at once."""
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_SECONDS}, daemon=True)
    thread.start()
    return thread
