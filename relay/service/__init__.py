"""The relay's HTTP service: ``create_app`` builds the FastAPI app (see ``relay.service.factory``)."""

from relay.service.factory import create_app, recover_pending

__all__ = ["create_app", "recover_pending"]
