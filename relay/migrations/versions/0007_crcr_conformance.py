"""CRCR conformance (issue 15): jobs keep their in_progress HUD body and triage verdict;
nightly/periodic reports; L3 demotions

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("hud_body", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("triage_verdict", sa.JSON(), nullable=True))
    op.create_table(
        "nightly_reports",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("sha", sa.String(length=100), nullable=False),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("event_type", sa.String(length=20), nullable=False),
        sa.Column("run_id", sa.String(length=100), nullable=False),
        sa.Column("run_attempt", sa.Integer(), nullable=False),
        sa.Column("job_name", sa.String(length=200), nullable=False),
        sa.Column("workflow_name", sa.String(length=200), nullable=False),
        sa.Column("conclusion", sa.String(length=30), nullable=True),
        sa.Column("triage_verdict", sa.JSON(), nullable=True),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("sha", "repo", "run_id", "run_attempt", "job_name",
                            name="uq_nightly_reports_job"),
    )
    op.create_index(op.f("ix_nightly_reports_repo"), "nightly_reports", ["repo"], unique=False)
    op.create_table(
        "demotions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("pr_number", sa.Integer(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("repo"),
    )


def downgrade() -> None:
    op.drop_table("demotions")
    op.drop_index(op.f("ix_nightly_reports_repo"), table_name="nightly_reports")
    op.drop_table("nightly_reports")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("triage_verdict")
        batch.drop_column("hud_body")
