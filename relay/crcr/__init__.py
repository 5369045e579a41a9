"""CRCR (RFC-0050) behaviour: allowlist, fan-out, callback tokens and state machine, sweeper,
the reporting outbox, and L3/L4 check runs and PR comments.

One module per concept: ``allowlist`` (levels), ``payloads`` (client_payload and trimming),
``fanout`` (repository_dispatch), ``tokens`` (callback auth), ``callbacks`` (state machine),
``ratelimit``, ``outbox`` (deliverer), ``checks`` (check runs, PR comments), ``sweeper``.
"""
