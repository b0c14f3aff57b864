"""URLs of the coverage pages (see labeling/views_coverage.py). Included before
admin.site.urls, whose catch-all would otherwise take /admin/coverage/."""

from django.urls import path

from labeling import views_coverage

urlpatterns = [
    path("admin/coverage/<slug:slug>/", views_coverage.coverage_page, name="coverage"),
    path("admin/coverage/<slug:slug>/publish/", views_coverage.coverage_publish, name="coverage_publish"),
    path("admin/coverage/<slug:slug>/pool/", views_coverage.coverage_pool, name="coverage_pool"),
]
