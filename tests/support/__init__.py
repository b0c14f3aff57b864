"""What many test modules share: the factories (factories.py), the one `golden_set` fixture and
its marker (fixtures.py), real-server helpers (forwarder.py)."""
