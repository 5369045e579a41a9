"""runs.baseline_run stored; index on test_results.test_id (history, flaky and quarantine queries)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 00:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("baseline_run", sa.String(length=100), nullable=True))
    op.create_index("ix_test_results_test_id", "test_results", ["test_id"])


def downgrade() -> None:
    op.drop_index("ix_test_results_test_id", table_name="test_results")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("baseline_run")
