from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from goldenset import views as goldenset_views

urlpatterns = [
    path("", goldenset_views.home, name="home"),
    path("sets/<slug:slug>/", goldenset_views.golden_set_detail, name="golden_set"),
    path("sets/<slug:slug>/versions/<int:number>/", goldenset_views.version_detail, name="version"),
    path("sets/<slug:slug>/versions/<int:number>/qrels.<str:fmt>", goldenset_views.version_export, name="version_export"),
    path("", include("api.urls")),
    path("", include("evaluation.urls")),
    path("", include("labeling.urls_judging")),
    path("", include("labeling.urls_quality")),
    path("", include("labeling.urls_completeness")),
    # Before admin.site.urls, whose catch-all would otherwise take /admin/coverage/.
    path("", include("labeling.urls_coverage")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
