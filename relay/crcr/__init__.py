"""CRCR (RFC-0050 and its newer features) as PyTorch's relay speaks it: allowlist, fan-out,
re-runs, callbacks (dispatched and nightly), OIDC, triage verdicts, check runs and PR comments,
demotion, the zombie sweeper and the reporting outbox.

One module per concept; ``README.md`` beside this file maps them and tables every CRCR behaviour
against ours, with the reason wherever they differ.
"""
