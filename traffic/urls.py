"""The traffic app's pages: a set's query logs (traffic.views)."""

from django.urls import path

from traffic import views

urlpatterns = [
    path("sets/<slug:slug>/query-logs/", views.query_logs, name="query_logs"),
    path("sets/<slug:slug>/query-logs/<int:log_id>/", views.query_log_detail, name="query_log"),
]
