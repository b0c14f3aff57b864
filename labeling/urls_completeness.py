"""URLs of the completeness pages (see labeling/views_completeness.py)."""

from django.urls import path

from labeling import views_completeness

urlpatterns = [
    path("sets/<slug:slug>/completeness/", views_completeness.completeness, name="completeness"),
]
