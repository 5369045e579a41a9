"""A module-level Celery app for the ``celery`` command: ``celery -A relay.worker.celery.app
inspect ping`` (the compose worker healthcheck) or ``... worker``.  Settings come from the
environment (``RELAY_BROKER_URL`` required)."""

from relay.settings import Settings
from relay.worker.celery.config import make_celery
from relay.worker.celery.tasks import register

app = make_celery(Settings())
register(app)
