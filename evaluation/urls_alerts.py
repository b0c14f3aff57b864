"""Pages of alerts and evaluation settings."""

urlpatterns: list = []
