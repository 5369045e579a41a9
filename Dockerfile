# The relay and its workers share one image (docker-compose.yml builds it once).
FROM python:3.11.11-slim-bookworm
ENV PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY relay ./relay
COPY selection ./selection
COPY test_specs ./test_specs
COPY spyre_backend ./spyre_backend
# torch from PyTorch's CPU index first: the default index would pull a multi-GB CUDA build
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
    && pip install '.[distributed]'
RUN useradd --create-home relay && mkdir -p /var/lib/relay && chown relay /var/lib/relay
USER relay
