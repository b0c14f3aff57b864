"""The traffic app's pages: a set's query logs (traffic.views) and its draws from them
(traffic.sampling_views, whose routes live in traffic.sampling_urls)."""

from django.urls import include, path

from traffic import views

urlpatterns = [
    path("sets/<slug:slug>/query-logs/", views.query_logs, name="query_logs"),
    path("sets/<slug:slug>/query-logs/<int:log_id>/", views.query_log_detail, name="query_log"),
    path("", include("traffic.sampling_urls")),
]
