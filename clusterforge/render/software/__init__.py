"""The software output family."""
