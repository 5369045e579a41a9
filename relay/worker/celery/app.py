"""A module-level Celery app for the ``celery`` command: ``celery -A relay.worker.celery.app
inspect ping`` (the compose worker healthcheck) or ``... worker``.  Settings come from the
environment (``RELAY_BROKER_URL`` required)."""

from relay.worker.celery.config import DistributedSettings, make_celery
from relay.worker.celery.tasks import register

app = make_celery(DistributedSettings())
register(app)
