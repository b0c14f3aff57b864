"""URLs of the quality pages (see labeling/quality/views.py)."""

from django.urls import path

from labeling.quality import views

urlpatterns = [
    path("sets/<slug:slug>/agreement/", views.agreement_page, name="agreement"),
    path("sets/<slug:slug>/adjudicate/", views.adjudicate_list, name="adjudicate"),
    path("sets/<slug:slug>/adjudicate/<int:query_pk>/<int:page_pk>/", views.adjudicate_pair, name="adjudicate_pair"),
    path("sets/<slug:slug>/quality/", views.quality_page, name="quality"),
    path("sets/<slug:slug>/quality/gold-checks/", views.gold_checks_add, name="gold_checks_add"),
    path("sets/<slug:slug>/quality/gold-share/", views.gold_share_update, name="gold_share_update"),
    path("sets/<slug:slug>/quality/query-order/", views.query_order_update, name="query_order_update"),
    path("sets/<slug:slug>/quality/overlap/", views.overlap_update, name="overlap_update"),
]
