"""What many test modules share: real-server helpers (forwarder.py)."""
