"""the dashboard's data: test_results.detail (failure output), run_selection (why each test
ran), run_progress (a delivery's run while it works), deliveries.next_attempt_at (retries)

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-02 10:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("test_results") as batch:
        batch.add_column(sa.Column("detail", sa.Text(), nullable=True))
    with op.batch_alter_table("deliveries") as batch:
        batch.add_column(sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "run_selection",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(length=100), sa.ForeignKey("runs.id", ondelete="CASCADE"),
                  nullable=False),
        sa.Column("test_id", sa.String(length=500), nullable=False),
        sa.Column("upstream", sa.String(length=500), nullable=False),
        sa.Column("op", sa.String(length=200), nullable=True),
        sa.Column("module", sa.String(length=200), nullable=True),
        sa.Column("dtype", sa.String(length=50), nullable=True),
        sa.Column("mode", sa.String(length=30), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("reasons", sa.JSON(), nullable=False),
    )
    op.create_index("ix_run_selection_run_id", "run_selection", ["run_id"])
    op.create_table(
        "run_progress",
        sa.Column("delivery_id", sa.String(length=100), primary_key=True),
        sa.Column("phase", sa.String(length=200), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("counts", sa.JSON(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("run_progress")
    op.drop_index("ix_run_selection_run_id", table_name="run_selection")
    op.drop_table("run_selection")
    with op.batch_alter_table("deliveries") as batch:
        batch.drop_column("next_attempt_at")
    with op.batch_alter_table("test_results") as batch:
        batch.drop_column("detail")
