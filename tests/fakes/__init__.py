"""Test doubles at the HTTP layer that reuse production code (fake GitHub, live server)."""
