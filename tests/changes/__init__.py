"""Tests of relay.changes (the ChangeSet builder)."""
