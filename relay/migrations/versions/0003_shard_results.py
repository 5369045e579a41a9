"""distributed: shard_results, one row per (run key, test id) written by upsert

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 22:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "shard_results",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_key", sa.String(length=100), nullable=False),
        sa.Column("test_id", sa.String(length=500), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=False),
        sa.Column("writes", sa.Integer(), nullable=False),
        sa.Column("upstream", sa.String(length=500), nullable=False),
        sa.Column("op", sa.String(length=200), nullable=True),
        sa.Column("module", sa.String(length=200), nullable=True),
        sa.Column("dtype", sa.String(length=50), nullable=True),
        sa.Column("mode", sa.String(length=30), nullable=False),
        sa.Column("outcome", sa.String(length=20), nullable=False),
        sa.Column("duration_ms", sa.Float(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_key", "test_id", name="uq_shard_results_key"),
    )
    op.create_index("ix_shard_results_run_key", "shard_results", ["run_key"])


def downgrade() -> None:
    op.drop_index("ix_shard_results_run_key", table_name="shard_results")
    op.drop_table("shard_results")
