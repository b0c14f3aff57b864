"""Pages of alerts and evaluation settings."""

from django.urls import path

from evaluation.alerts import views

urlpatterns = [
    path("sets/<slug:slug>/alerts/", views.alerts_page, name="alerts"),
    path("sets/<slug:slug>/evaluation-settings/", views.evaluation_settings_page, name="evaluation_settings"),
]
