import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
application = get_wsgi_application()

if settings.CELERY_TASK_ALWAYS_EAGER and settings.TASKS_OFF_REQUEST_THREAD:
    from goldset.celery import beat_in_process, tasks_off_request_thread

    tasks_off_request_thread()
    # No beat process either: the schedules (sweepers, nightly runs, canary probes) run here.
    if settings.BEAT_IN_PROCESS:
        beat_in_process()
