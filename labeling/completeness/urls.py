"""URLs of the completeness pages (see labeling/completeness/views.py)."""

from django.urls import path

from labeling.completeness import views

urlpatterns = [
    path("sets/<slug:slug>/completeness/", views.completeness, name="completeness"),
    path("sets/<slug:slug>/completeness/jobs/", views.completeness_jobs, name="completeness_jobs"),
]
