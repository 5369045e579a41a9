"""regression: run environments and per-test verdicts

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 21:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_environments",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=100), nullable=False),
        sa.Column("role", sa.String(length=10), nullable=False),
        sa.Column("name", sa.String(length=1000), nullable=False),
        sa.Column("torch_version", sa.String(length=100), nullable=True),
        sa.Column("torch_git_version", sa.String(length=100), nullable=True),
        sa.Column("wheel_sha256", sa.String(length=64), nullable=True),
        sa.Column("faults", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "role", name="uq_run_environments_role"),
    )
    op.create_index("ix_run_environments_run_id", "run_environments", ["run_id"])
    op.create_index("ix_run_environments_name", "run_environments", ["name"])
    op.create_table(
        "verdicts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=100), nullable=False),
        sa.Column("test_id", sa.String(length=500), nullable=False),
        sa.Column("verdict", sa.String(length=20), nullable=False),
        sa.Column("head", sa.String(length=20), nullable=False),
        sa.Column("base", sa.String(length=20), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["runs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "test_id", name="uq_verdicts_run_test"),
    )
    op.create_index("ix_verdicts_run_id", "verdicts", ["run_id"])
    op.create_index("ix_verdicts_verdict", "verdicts", ["verdict"])


def downgrade() -> None:
    op.drop_index("ix_verdicts_verdict", table_name="verdicts")
    op.drop_index("ix_verdicts_run_id", table_name="verdicts")
    op.drop_table("verdicts")
    op.drop_index("ix_run_environments_name", table_name="run_environments")
    op.drop_index("ix_run_environments_run_id", table_name="run_environments")
    op.drop_table("run_environments")
