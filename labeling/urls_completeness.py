"""URLs of the completeness pages (see labeling/views_completeness.py)."""

from django.urls import path

from labeling import views_completeness

urlpatterns = [
    path("sets/<slug:slug>/completeness/", views_completeness.completeness, name="completeness"),
    path("sets/<slug:slug>/completeness/jobs/", views_completeness.completeness_jobs, name="completeness_jobs"),
]
