from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from goldenset import team_views
from goldenset import views as goldenset_views
from goldset import health, metrics, sso, today

urlpatterns = [
    # Operations: no login, no session (goldset.health, goldset.metrics).
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("", goldenset_views.home, name="home"),
    # The set's home composes the apps (what needs you today), so it is served from up here.
    path("sets/<slug:slug>/", today.golden_set_home, name="golden_set"),
    path("sets/<slug:slug>/tags/", goldenset_views.version_tag_move, name="version_tag_move"),
    path("sets/<slug:slug>/versions/<int:number>/", goldenset_views.version_detail, name="version"),
    path("sets/<slug:slug>/versions/<int:number>/qrels.<str:fmt>", goldenset_views.version_export, name="version_export"),
    path("sets/<slug:slug>/versions/<int:number>/answers.jsonl", goldenset_views.version_answers_export, name="version_answers_export"),
    path("sets/<slug:slug>/queries/<path:query_id>/", goldenset_views.query_page, name="query"),
    path("sets/<slug:slug>/versions/<int:number>/model-fills/", goldenset_views.version_model_fill_start, name="version_model_fill_start"),
    path(
        "sets/<slug:slug>/versions/<int:number>/model-fills/<int:fill_id>/qrels.<str:fmt>",
        goldenset_views.version_model_fill_export,
        name="version_model_fill_export",
    ),
    path("sets/<slug:slug>/publish/", goldenset_views.publish_page, name="publish"),
    path("sets/<slug:slug>/publish/<int:job_id>/", goldenset_views.publish_job_page, name="publish_job"),
    path("sets/<slug:slug>/publish/<int:job_id>/status/", goldenset_views.publish_job_page, {"fragment": True}, name="publish_job_status"),
    path("sets/<slug:slug>/changes/", goldenset_views.version_changes_page, name="version_changes"),
    path("sets/<slug:slug>/audit/", goldenset_views.audit_page, name="audit"),
    path("sets/<slug:slug>/members/", goldenset_views.golden_set_members, name="golden_set_members"),
    path("sets/<slug:slug>/members/<int:membership_id>/revoke/", goldenset_views.golden_set_member_revoke, name="golden_set_member_revoke"),
    path("orgs/", team_views.organisations, name="organisations"),
    path("orgs/<slug:org_slug>/", team_views.organisation, name="organisation"),
    path("orgs/<slug:org_slug>/audit/", team_views.organisation_audit, name="organisation_audit"),
    path("orgs/<slug:org_slug>/teams/<slug:team_slug>/", team_views.team, name="team"),
    path("", include("api.urls")),
    path("", include("evaluation.urls")),
    # Before admin.site.urls, whose catch-all would otherwise take /admin/coverage/.
    path("", include("labeling.urls")),
    path("", include("monitoring.urls")),
    path("", include("answers.urls")),
    path("", include("traffic.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Single sign-on (goldset.sso): mozilla-django-oidc's start, callback and logout, which
    # answer 404 while it is off, and the page a refused sign-in lands on.
    path("oidc/", include("mozilla_django_oidc.urls")),
    path("accounts/sign-on-failed/", sso.sso_failed, name="sso_failed"),
    # Every user changes their own password, and resets a forgotten one by email; the
    # templates are templates/registration/password_*.html. Not while passwords are off.
    path("accounts/password/", sso.local_passwords_only(auth_views.PasswordChangeView.as_view()), name="password_change"),
    path("accounts/password/done/", sso.local_passwords_only(auth_views.PasswordChangeDoneView.as_view()), name="password_change_done"),
    path("accounts/password/reset/", sso.local_passwords_only(auth_views.PasswordResetView.as_view()), name="password_reset"),
    path("accounts/password/reset/sent/", sso.local_passwords_only(auth_views.PasswordResetDoneView.as_view()), name="password_reset_done"),
    path(
        "accounts/password/reset/<uidb64>/<token>/",
        sso.local_passwords_only(auth_views.PasswordResetConfirmView.as_view()),
        name="password_reset_confirm",
    ),
    path(
        "accounts/password/reset/done/",
        sso.local_passwords_only(auth_views.PasswordResetCompleteView.as_view()),
        name="password_reset_complete",
    ),
    path("admin/", admin.site.urls),
]

# A database outage answers 503 with Retry-After (goldset.errors), pages and API alike.
handler500 = "goldset.errors.server_error"
# A malformed page parameter answers 400 naming it (lib.params).
handler400 = "goldset.errors.bad_request"
