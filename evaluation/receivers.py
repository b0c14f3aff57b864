"""React to new versions and runs by enqueueing evaluations, and to new alerts by enqueueing
the delivery of the incident message they joined, once the transaction commits.

Nothing here computes: a rolled-back publish or upload must start no task, and a task
must never see a row its sender could still roll back (delay_on_commit).
"""

from django.dispatch import receiver

from evaluation.signals import alert_raised, run_uploaded
from evaluation.tasks import alert_deliver_task, evaluate_run_latest_task, evaluate_version_task
from goldenset.signals import version_published


@receiver(version_published, dispatch_uid="evaluation.on_version_published")
def on_version_published(sender, version_id: int, **kwargs) -> None:
    evaluate_version_task.delay_on_commit(version_id)


@receiver(run_uploaded, dispatch_uid="evaluation.on_run_uploaded")
def on_run_uploaded(sender, run_id: int, **kwargs) -> None:
    evaluate_run_latest_task.delay_on_commit(run_id)


@receiver(alert_raised, dispatch_uid="evaluation.on_alert_raised")
def on_alert_raised(sender, alert_id: int, **kwargs) -> None:
    alert_deliver_task.delay_on_commit(alert_id)
