"""Signals this floor sends upward. Receivers live on higher floors and only enqueue tasks."""

from django.dispatch import Signal

# Sent inside version_publish's transaction with `version_id`; receivers must defer
# their work to on_commit so that nothing sees a version that was rolled back.
version_published = Signal()
