from django.apps import AppConfig


class GoldsetConfig(AppConfig):
    """The project package as an app (floor 5), for the commands that compose several apps
    (load_demo writes golden sets and runs)."""

    name = "goldset"
    verbose_name = "Goldset"
