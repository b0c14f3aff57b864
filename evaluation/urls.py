"""The evaluation app's pages: runs and results here, alerts and settings from
evaluation.alerts.urls. Query ids may hold '/', '#' or ':', so the drill-down takes the
rest of the path (`path:`); reverse() percent-encodes what a URL cannot carry."""

from django.urls import include, path, re_path

from evaluation import views

urlpatterns = [
    path("sets/<slug:slug>/results/", views.results, name="results"),
    path("sets/<slug:slug>/results/progress/", views.results_progress, name="results_progress"),
    path("sets/<slug:slug>/compare/", views.compare, name="compare"),
    path("sets/<slug:slug>/runs/", views.runs, name="runs"),
    path("sets/<slug:slug>/runs/<int:run_id>/", views.run_detail, name="run"),
    path("sets/<slug:slug>/runs/uploads/<int:job_id>/", views.run_upload, name="run_upload"),
    path("sets/<slug:slug>/runs/uploads/<int:job_id>/status/", views.run_upload, {"fragment": True}, name="run_upload_status"),
    re_path(
        r"^sets/(?P<slug>[-a-zA-Z0-9_]+)/runs/(?P<run_id>[0-9]+)/(?P<action>archive|unarchive|mark-complete|mark-partial)/$",
        views.run_lifecycle,
        name="run_lifecycle",
    ),
    path("sets/<slug:slug>/runs/<int:run_id>/versions/", views.run_versions, name="run_versions"),
    path("sets/<slug:slug>/runs/<int:run_id>/queries/", views.run_query_jump, name="run_query_jump"),
    path("sets/<slug:slug>/runs/<int:run_id>/queries/<path:query_id>/", views.run_query, name="run_query"),
    path("", include("evaluation.alerts.urls")),
]
