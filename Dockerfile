# The relay and its workers share one image (docker-compose.yml builds it once).
FROM python:3.12.8-slim-bookworm
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY relay ./relay
COPY selection ./selection
COPY test_specs ./test_specs
COPY spyre_backend ./spyre_backend
RUN pip install '.[test]' 'celery[redis]>=5.4'
RUN useradd --create-home relay && mkdir -p /var/lib/relay && chown relay /var/lib/relay
USER relay
