"""Alerts: the rules checked after every evaluation (rules.py), their delivery by e-mail and
webhook (delivery.py), and the alerts and evaluation settings pages."""
