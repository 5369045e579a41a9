"""The relay's HTTP service: ``create_app`` builds the FastAPI app (see ``relay.app.factory``)."""

from relay.app.factory import create_app, recover_pending

__all__ = ["create_app", "recover_pending"]
