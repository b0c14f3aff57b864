"""URLs of the judging pages (see labeling/views_judging.py)."""

urlpatterns: list = []
