"""URLs of the quality pages (see labeling/views_quality.py)."""

urlpatterns: list = []
