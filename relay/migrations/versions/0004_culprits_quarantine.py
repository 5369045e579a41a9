"""regression follow-ups: runs.ref, culprits, quarantine

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 00:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("ref", sa.String(length=255), nullable=True))
    op.create_table(
        "culprits",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=100), nullable=False),
        sa.Column("commit", sa.String(length=200), nullable=False),
        sa.Column("tests", sa.JSON(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("steps", sa.JSON(), nullable=False),
        sa.Column("found_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id"),
    )
    op.create_index("ix_culprits_commit", "culprits", ["commit"])
    op.create_table(
        "quarantine",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("test_id", sa.String(length=500), nullable=False),
        sa.Column("state", sa.String(length=30), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("flaky_runs", sa.Integer(), nullable=False),
        sa.Column("issue_repo", sa.String(length=200), nullable=True),
        sa.Column("issue_number", sa.Integer(), nullable=True),
        sa.Column("issue_url", sa.String(length=1000), nullable=True),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reenable_proposed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("greens", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("test_id"),
    )
    op.create_index("ix_quarantine_state", "quarantine", ["state"])


def downgrade() -> None:
    op.drop_index("ix_quarantine_state", table_name="quarantine")
    op.drop_table("quarantine")
    op.drop_index("ix_culprits_commit", table_name="culprits")
    op.drop_table("culprits")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("ref")
