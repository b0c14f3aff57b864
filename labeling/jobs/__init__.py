"""Pool jobs: pool builds, extensions, sample draws and flagged-slice pools asked for from a
page or the admin, recorded and run by a Celery worker (labeling.tasks)."""
