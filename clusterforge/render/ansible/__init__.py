"""The ansible output family."""
