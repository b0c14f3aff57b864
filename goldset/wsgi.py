import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
application = get_wsgi_application()

if settings.CELERY_TASK_ALWAYS_EAGER and settings.TASKS_OFF_REQUEST_THREAD:
    from goldset.celery import tasks_off_request_thread

    tasks_off_request_thread()
