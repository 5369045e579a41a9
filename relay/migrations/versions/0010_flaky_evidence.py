"""Flakiness evidence: verdicts.flaky_by + verdicts.evidence (run ids); quarantine.flaky_run_ids

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("verdicts") as batch:
        batch.add_column(sa.Column("flaky_by", sa.String(length=20), nullable=True))
        batch.add_column(sa.Column("evidence", sa.JSON(), nullable=True))
    with op.batch_alter_table("quarantine") as batch:
        batch.add_column(sa.Column("flaky_run_ids", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("quarantine") as batch:
        batch.drop_column("flaky_run_ids")
    with op.batch_alter_table("verdicts") as batch:
        batch.drop_column("evidence")
        batch.drop_column("flaky_by")
