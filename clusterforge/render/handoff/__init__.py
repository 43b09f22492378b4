"""The handoff output family."""
