"""The labeling app's URLs: each feature's, included by goldset/urls.py."""

from django.urls import include, path

urlpatterns = [
    path("", include("labeling.judging.urls")),
    path("", include("labeling.quality.urls")),
    path("", include("labeling.completeness.urls")),
    path("", include("labeling.coverage.urls")),
    path("", include("labeling.model_labels.urls")),
]
