"""URLs of the coverage pages (see labeling/views_coverage.py)."""

urlpatterns: list = []
