"""Machinery: the output folder (staged, written behind, swapped in) and what a file's text is; it knows no
blueprint (tests/unit/test_architecture.py)."""
