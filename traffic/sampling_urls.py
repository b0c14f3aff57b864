"""URLs of the draw page (traffic/sampling_views.py): a list of their own, for traffic/urls.py
(or goldset/urls.py) to include beside the query log pages."""

from django.urls import path

from traffic import sampling_views

urlpatterns = [
    path("sets/<slug:slug>/draws/", sampling_views.draws_page, name="query_draws"),
    path("sets/<slug:slug>/draws/new/", sampling_views.draw_create, name="query_draw_create"),
    path("sets/<slug:slug>/draws/top-up/", sampling_views.draw_top_up_create, name="query_draw_top_up"),
]
