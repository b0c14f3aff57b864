"""gunicorn's settings for Goldset (`gunicorn -c python:goldset.gunicorn_conf goldset.wsgi`):
its own error and access lines in the app's format, so that with LOG_FORMAT=json every line
the web container writes is one JSON object (time, level, logger, message), as the app's are.

The bind address, workers and timeout stay on the command line, where compose and the
Dockerfile show them.
"""

import os

_format = os.environ.get("LOG_FORMAT", "text")
if _format not in ("text", "json"):
    _format = "text"  # the settings refuse it with a clear message when the app loads

accesslog = "-"  # access lines to standard output, through the logger below
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "text": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "goldset.logs.JsonFormatter"},
    },
    "handlers": {
        "error": {"class": "logging.StreamHandler", "formatter": _format, "stream": "ext://sys.stderr"},
        "access": {"class": "logging.StreamHandler", "formatter": _format, "stream": "ext://sys.stdout"},
    },
    # gunicorn's own defaults name a root handler this replaces; the app's settings configure
    # the root logger when a worker loads it.
    "root": {"level": "INFO", "handlers": []},
    "loggers": {
        "gunicorn.error": {"handlers": ["error"], "level": "INFO", "propagate": False},
        "gunicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
    },
}
