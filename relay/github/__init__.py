"""Everything that speaks GitHub: webhook signatures, typed events, the REST client.

Split by role (Zuul's driver layout): ``signing`` (HMAC of deliveries), ``constants`` (the
GitHub / CRCR vocabulary shared by every stage), ``webhooks`` (which deliveries the relay acts
on, at intake), ``events`` (the typed event of each acted-on delivery, parsed once),
``client`` (REST: PR files, compare, dispatches), ``checks``, ``compare``, ``catchup``.
"""
