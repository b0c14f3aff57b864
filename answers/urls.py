"""The answers app's pages: generators and judges, oracle experiments and a run's sweep."""

from django.urls import path

from answers import views

urlpatterns = [
    path("sets/<slug:slug>/runs/<int:run_id>/sweep/", views.run_sweep, name="run_sweep"),
    path("sets/<slug:slug>/sweep/ask/", views.endpoint_depth_start, name="endpoint_depth_start"),
    path("sets/<slug:slug>/sweep/asks/<int:job_id>/", views.endpoint_depth_page, name="endpoint_depth"),
    path("sets/<slug:slug>/generators/", views.generators_page, name="generators"),
    path("sets/<slug:slug>/generators/add/", views.generator_add_page, name="generator_add"),
    path("sets/<slug:slug>/generators/add-endpoint/", views.generator_endpoint_add_page, name="generator_endpoint_add"),
    path("sets/<slug:slug>/answer-judges/add/", views.answer_judge_add_page, name="answer_judge_add"),
    path("sets/<slug:slug>/oracle/", views.experiments_page, name="oracle_experiments"),
    path("sets/<slug:slug>/oracle/start/", views.experiment_start, name="oracle_experiment_start"),
    path("sets/<slug:slug>/oracle/<int:experiment_id>/continue/", views.experiment_continue, name="oracle_experiment_continue"),
    path("sets/<slug:slug>/oracle/<int:experiment_id>/", views.experiment_page, name="oracle_experiment"),
    path(
        "sets/<slug:slug>/oracle/<int:experiment_id>/status/",
        views.experiment_page,
        {"fragment": True},
        name="oracle_experiment_status",
    ),
    path(
        "sets/<slug:slug>/oracle/<int:experiment_id>/answers/<int:answer_id>/grade/",
        views.answer_grade,
        name="answer_grade",
    ),
]
