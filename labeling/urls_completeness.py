"""URLs of the completeness pages (see labeling/views_completeness.py)."""

urlpatterns: list = []
