"""Pages of runs and results (owned by the results pages)."""

urlpatterns: list = []
