from django.apps import AppConfig


class GoldensetConfig(AppConfig):
    name = "goldenset"
    verbose_name = "Golden sets"
