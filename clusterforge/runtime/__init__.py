"""Machinery: the process the stages run in (forked work, the collector paused, glibc's freed memory kept); it
knows no blueprint (tests/unit/test_architecture.py)."""
