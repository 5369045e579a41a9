"""Spec write-back: runs.spec_proposal (stage 4's unified diff against the spec files)

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02 07:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("spec_proposal", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("spec_proposal")
