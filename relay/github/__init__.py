"""Everything that speaks GitHub: webhook signatures, payload models, the REST client.

Split by role (Zuul's driver layout): ``signing`` (HMAC of deliveries), ``webhooks`` (typed
payload parts and the ``Delivery`` value object), ``client`` (REST: PR files, compare).
"""
