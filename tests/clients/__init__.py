"""Tests of the Python client (clients/python) against a live server with real tokens."""
