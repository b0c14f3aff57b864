from django.apps import AppConfig


class ApiConfig(AppConfig):
    """The REST API (floor 5): tokens, and endpoints that compose goldenset and evaluation."""

    name = "api"
    verbose_name = "API"
    default_auto_field = "django.db.models.BigAutoField"
