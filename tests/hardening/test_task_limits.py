"""Every Celery task of the project has a soft and a hard time limit (hardening #31 item 3):
a task that hangs (an endpoint that never answers, a lock never let go) is stopped by its
soft limit, which the job runner records as a failure, and killed by its hard limit if
even that does not end it."""

import importlib

from django.apps import apps

from goldset.celery import app


def project_tasks():
    for config in apps.get_app_configs():
        try:
            importlib.import_module(f"{config.name}.tasks")
        except ModuleNotFoundError as exc:
            if exc.name != f"{config.name}.tasks":
                raise
    # Celery's own tasks, and those a test module defines for itself, are not the project's.
    return {name: task for name, task in app.tasks.items() if not name.startswith(("celery.", "tests."))}


def test_every_task_of_the_project_has_a_soft_and_a_hard_time_limit():
    tasks = project_tasks()
    assert len(tasks) >= 16
    unlimited = sorted(name for name, task in tasks.items() if not task.soft_time_limit or not task.time_limit)
    assert unlimited == []


def test_each_soft_limit_comes_before_its_hard_limit():
    assert [name for name, task in project_tasks().items() if task.soft_time_limit >= task.time_limit] == []
