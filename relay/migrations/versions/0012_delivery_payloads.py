"""Delivery payloads in their own table (status updates no longer rewrite the 25 KB body)

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02 17:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "delivery_payloads",
        sa.Column("delivery_id", sa.String(length=100), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("delivery_id"),
    )
    op.execute("INSERT INTO delivery_payloads (delivery_id, payload) "
               "SELECT delivery_id, payload FROM deliveries")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("payload")


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("payload", sa.Text(), nullable=False, server_default="{}"))
    op.execute("UPDATE deliveries SET payload = (SELECT p.payload FROM delivery_payloads p "
               "WHERE p.delivery_id = deliveries.delivery_id) WHERE delivery_id IN "
               "(SELECT delivery_id FROM delivery_payloads)")
    op.drop_table("delivery_payloads")
