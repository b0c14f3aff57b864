"""Signals of the evaluation floor. Receivers only enqueue tasks, on commit."""

from django.dispatch import Signal

# Sent inside run_import's transaction with `run_id`.
run_uploaded = Signal()
