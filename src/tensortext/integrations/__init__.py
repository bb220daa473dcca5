"""Adapters for training libraries (TRL)."""
