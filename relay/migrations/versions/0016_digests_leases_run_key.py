"""Delivery body digests: a byte-identical signed body under a new delivery id is a duplicate

Revision ID: 0016
Revises: 0012
Create Date: 2026-12-06 03:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "delivery_digests",
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("delivery_id", sa.String(length=100), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("digest"),
    )


def downgrade() -> None:
    op.drop_table("delivery_digests")
