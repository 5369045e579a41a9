"""shard_results.detail: a distributed test's failure output, as the runner reports it

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-02 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("shard_results") as batch:
        batch.add_column(sa.Column("detail", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("shard_results") as batch:
        batch.drop_column("detail")
