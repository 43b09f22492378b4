"""The imex output family."""
