"""URLs of the coverage pages (see labeling/coverage/views.py). Included before
admin.site.urls, whose catch-all would otherwise take /admin/coverage/."""

from django.urls import path

from labeling.coverage import views

urlpatterns = [
    path("admin/coverage/<slug:slug>/", views.coverage_page, name="coverage"),
    path("admin/coverage/<slug:slug>/publish/", views.coverage_publish, name="coverage_publish"),
    path("admin/coverage/<slug:slug>/pool/", views.coverage_pool, name="coverage_pool"),
    path("admin/coverage/<slug:slug>/stale/", views.coverage_stale_queue, name="coverage_stale_queue"),
    path("admin/coverage/<slug:slug>/canaries/", views.coverage_canary_add, name="coverage_canary_add"),
]
