"""URLs of the quality pages (see labeling/views_quality.py)."""

from django.urls import path

from labeling import views_quality

urlpatterns = [
    path("sets/<slug:slug>/agreement/", views_quality.agreement_page, name="agreement"),
    path("sets/<slug:slug>/adjudicate/", views_quality.adjudicate_list, name="adjudicate"),
    path("sets/<slug:slug>/adjudicate/<int:query_pk>/<int:page_pk>/", views_quality.adjudicate_pair, name="adjudicate_pair"),
    path("sets/<slug:slug>/quality/", views_quality.quality_page, name="quality"),
    path("sets/<slug:slug>/quality/gold-checks/", views_quality.gold_checks_add, name="gold_checks_add"),
    path("sets/<slug:slug>/quality/gold-share/", views_quality.gold_share_update, name="gold_share_update"),
]
