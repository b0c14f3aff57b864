"""The monitoring app's URLs, included by goldset/urls.py: the monitoring page and its
actions (monitoring.overview.views), and the endpoint pages (monitoring.endpoints.views).

Endpoint names are letters, digits, '.', '_' and '-' (monitoring.endpoints.services.NAME),
so `<str:name>` takes every one of them; "add" is matched first, as the add page.
"""

from django.urls import path

from monitoring.endpoints import views as endpoint_views
from monitoring.overview import views as overview_views

urlpatterns = [
    path("sets/<slug:slug>/monitoring/", overview_views.monitoring_view, name="monitoring"),
    path("sets/<slug:slug>/monitoring/progress/", overview_views.monitoring_progress, name="monitoring_progress"),
    path("sets/<slug:slug>/endpoints/", endpoint_views.endpoints_page, name="endpoints"),
    path("sets/<slug:slug>/endpoints/add/", endpoint_views.endpoint_add_page, name="endpoint_add"),
    path("sets/<slug:slug>/endpoints/<str:name>/", endpoint_views.endpoint_edit_page, name="endpoint_edit"),
    path("sets/<slug:slug>/endpoints/<str:name>/try/", endpoint_views.endpoint_try_page, name="endpoint_try"),
    path("sets/<slug:slug>/endpoints/<str:name>/try/<str:token>/", endpoint_views.endpoint_try_page, name="endpoint_try_result"),
    path("sets/<slug:slug>/endpoints/<str:name>/delete/", endpoint_views.endpoint_delete_page, name="endpoint_delete"),
    path("sets/<slug:slug>/endpoints/<str:name>/run-now/", overview_views.endpoint_run_now, name="endpoint_run_now"),
    path("sets/<slug:slug>/endpoints/<str:name>/probe-now/", overview_views.endpoint_probe_now, name="endpoint_probe_now"),
    path(
        "sets/<slug:slug>/endpoints/<str:name>/index-probe-now/",
        overview_views.endpoint_index_probe_now,
        name="endpoint_index_probe_now",
    ),
]
