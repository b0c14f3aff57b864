"""Pages of alerts and evaluation settings."""

from django.urls import path

from evaluation import views_alerts

urlpatterns = [
    path("sets/<slug:slug>/alerts/", views_alerts.alerts_page, name="alerts"),
    path("sets/<slug:slug>/evaluation-settings/", views_alerts.evaluation_settings_page, name="evaluation_settings"),
]
