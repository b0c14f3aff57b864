"""What many test modules share: the factories (factories.py), the one `golden_set` fixture and
its marker, and rows kept for a module's tests (fixtures.py), the test database copied from a
migrated template (migrated.py), real-server helpers (forwarder.py)."""
