"""deliveries.attempts: processing attempts, for retrying transient failures

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 01:05:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("attempts", sa.Integer(), server_default="0", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("attempts")
