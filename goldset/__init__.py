"""The project package: settings, urls, the Celery app, and the views that compose the apps."""

from goldset.celery import app as celery_app

__all__ = ["celery_app"]
