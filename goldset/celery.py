"""The Celery app. Workers warm ranx's numba kernels at start (see evaluation.warmup)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")

app = Celery("goldset")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
