"""A module-level Celery app for the ``celery`` command: ``celery -A relay.distributed.celery_app
inspect ping`` (the compose worker healthcheck) or ``... worker``.  Settings come from the
environment (``RELAY_BROKER_URL`` required)."""

from relay.distributed.config import DistributedSettings, make_celery
from relay.distributed.tasks import register

app = make_celery(DistributedSettings())
register(app)
