"""Floor 3: runs, metrics, completeness, alerts and the Celery tasks that compute them."""
