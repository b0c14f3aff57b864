"""URLs of the judging pages (see labeling/judging/views.py).

The judging URLs are a contract: bench/ drives them under load.
"""

from django.urls import path

from labeling.judging import views

urlpatterns = [
    path("label/", views.judging_home, name="judging_home"),
    path("label/<slug:slug>/", views.judging_screen, name="judging_screen"),
    path("label/<slug:slug>/next/", views.judging_next, name="judging_next"),
    path("label/<slug:slug>/tasks/<int:task_id>/judge/", views.judging_judge, name="judging_judge"),
    path("label/<slug:slug>/tasks/<int:task_id>/skip/", views.judging_skip, name="judging_skip"),
    path("label/<slug:slug>/undo/", views.judging_undo, name="judging_undo"),
]
