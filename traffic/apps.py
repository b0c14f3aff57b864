from django.apps import AppConfig


class TrafficConfig(AppConfig):
    name = "traffic"
    verbose_name = "Query logs and sampling"
