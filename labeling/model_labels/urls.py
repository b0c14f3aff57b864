"""URLs of the model labels page (see labeling/model_labels/views.py)."""

from django.urls import path

from labeling.model_labels import views

urlpatterns = [
    path("sets/<slug:slug>/model-labels/", views.model_labels_page, name="model_labels"),
    path("sets/<slug:slug>/model-labels/judge/", views.judge_job_start, name="judge_job_start"),
    path("sets/<slug:slug>/model-labels/judge-jobs/", views.judge_jobs_fragment, name="judge_jobs"),
]
