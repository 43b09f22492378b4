"""The switches output family."""
