"""Reporting results to the dashboard in CRCR's HUD body shape.

``models``  the body (``HudBody``: trusted metrics, the downstream's untrusted callback payload)
``body``    a relay run's body (``build_hud_body``)
``ingest``  one body into the dashboard's store (the ingest route and the in-process sender)
``sender``  remote POST or in-process store (``make_sender``), with retries (``post_results``)
``outbox``  a webhook run's body as an outbox row in the run's transaction (``enqueue_result``)
"""
