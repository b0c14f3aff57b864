"""Signals of the evaluation floor. Receivers only enqueue tasks, on commit."""

from django.dispatch import Signal

# Sent inside run_import's transaction with `run_id`.
run_uploaded = Signal()
# Sent inside alerts_check's transaction with `alert_id`, once for each alert it creates.
alert_raised = Signal()
