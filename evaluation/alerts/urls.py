"""Pages of alerts and evaluation settings."""

from django.urls import path

from evaluation.alerts import views

urlpatterns = [
    path("sets/<slug:slug>/alerts/", views.alerts_page, name="alerts"),
    path("sets/<slug:slug>/alerts/incidents/<int:incident_id>/", views.incident_action_page, name="incident_action"),
    path("sets/<slug:slug>/alerts/slice-mutes/", views.slice_mute_page, name="slice_mute"),
    path("sets/<slug:slug>/evaluation-settings/", views.evaluation_settings_page, name="evaluation_settings"),
    path("sets/<slug:slug>/evaluation-settings/prompt-cost/", views.prompt_cost_settings_page, name="prompt_cost_settings"),
    path("sets/<slug:slug>/webhook/rotate-secret/", views.webhook_secret_rotate_page, name="webhook_secret_rotate"),
    path("sets/<slug:slug>/webhook/test/", views.webhook_test_page, name="webhook_test"),
]
