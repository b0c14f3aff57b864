from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from goldenset import views as goldenset_views

urlpatterns = [
    path("", goldenset_views.home, name="home"),
    path("sets/<slug:slug>/", goldenset_views.golden_set_detail, name="golden_set"),
    path("sets/<slug:slug>/versions/<int:number>/", goldenset_views.version_detail, name="version"),
    path("sets/<slug:slug>/versions/<int:number>/qrels.<str:fmt>", goldenset_views.version_export, name="version_export"),
    path("sets/<slug:slug>/members/", goldenset_views.golden_set_members, name="golden_set_members"),
    path("", include("api.urls")),
    path("", include("evaluation.urls")),
    path("", include("evaluation.urls_alerts")),
    # Before admin.site.urls, whose catch-all would otherwise take /admin/coverage/.
    path("", include("labeling.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
