"""Time to signal: test_results.not_rerun, runs.reruns_skipped, runs.selected_at

A deterministic device refusal (``test_specs.values.refusals``) is not rerun; its result says so
and the run counts them.  ``selected_at`` splits a run into selection and execution for the
detection time (``relay.service.detection``).

Revision ID: 0015
Revises: 0012
Create Date: 2026-12-06 02:45:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("test_results") as batch:
        batch.add_column(sa.Column("not_rerun", sa.Text(), nullable=True))
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("reruns_skipped", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("selected_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("selected_at")
        batch.drop_column("reruns_skipped")
    with op.batch_alter_table("test_results") as batch:
        batch.drop_column("not_rerun")
