"""Delivery body digests, delivery leases, one webhook run per delivery (issue 31)

- ``delivery_digests``: a byte-identical signed body under a new delivery id is a duplicate;
- ``deliveries.lease_until``: the lease a working attempt renews (``relay.store.leases``);
- ``deliveries.subject`` / ``head_sha``: a PR's newer head supersedes an older one's local run;
- ``uq_runs_webhook_delivery``: a webhook delivery stores one run.  Older duplicates (a run
  stored twice before this revision) keep their rows with trigger ``duplicate`` so the index can
  be built; the newest run of the delivery stays ``webhook``.

Revision ID: 0016
Revises: 0012
Create Date: 2026-12-06 03:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_WEBHOOK = sa.text("trigger = 'webhook'")


def upgrade() -> None:
    op.create_table(
        "delivery_digests",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("delivery_id", sa.String(length=100), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("digest"),
    )
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("lease_until", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("subject", sa.String(length=120), nullable=True))
        batch.add_column(sa.Column("head_sha", sa.String(length=64), nullable=True))
    op.create_index("ix_deliveries_subject", "deliveries", ["subject"])
    op.execute(
        "UPDATE runs SET trigger = 'duplicate' WHERE trigger = 'webhook' AND delivery_id IS NOT NULL "
        "AND id NOT IN (SELECT id FROM (SELECT r.id, ROW_NUMBER() OVER (PARTITION BY r.delivery_id "
        "ORDER BY r.started_at DESC, r.id DESC) AS n FROM runs r WHERE r.trigger = 'webhook' "
        "AND r.delivery_id IS NOT NULL) ranked WHERE n = 1)")
    op.create_index("uq_runs_webhook_delivery", "runs", ["delivery_id"], unique=True,
                    sqlite_where=_WEBHOOK, postgresql_where=_WEBHOOK)


def downgrade() -> None:
    op.drop_index("uq_runs_webhook_delivery", table_name="runs")
    op.drop_index("ix_deliveries_subject", table_name="deliveries")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("head_sha")
        batch.drop_column("subject")
        batch.drop_column("lease_until")
    op.drop_table("delivery_digests")
