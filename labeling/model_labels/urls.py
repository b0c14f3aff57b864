"""URLs of the model labels page (see labeling/model_labels/views.py)."""

from django.urls import path

from labeling.model_labels import views

urlpatterns = [
    path("sets/<slug:slug>/model-labels/", views.model_labels_page, name="model_labels"),
]
