"""URLs of the judging pages and the members page (see labeling/views_judging.py).

The judging URLs are a contract: bench/ drives them under load.
"""

from django.urls import path

from labeling import views_judging

urlpatterns = [
    path("label/", views_judging.judging_home, name="judging_home"),
    path("label/<slug:slug>/", views_judging.judging_screen, name="judging_screen"),
    path("label/<slug:slug>/next/", views_judging.judging_next, name="judging_next"),
    path("label/<slug:slug>/tasks/<int:task_id>/judge/", views_judging.judging_judge, name="judging_judge"),
    path("label/<slug:slug>/tasks/<int:task_id>/skip/", views_judging.judging_skip, name="judging_skip"),
    path("label/<slug:slug>/undo/", views_judging.judging_undo, name="judging_undo"),
    path("sets/<slug:slug>/members/", views_judging.golden_set_members, name="golden_set_members"),
]
