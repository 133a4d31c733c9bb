"""The test suite (a package so that `python -m tests.goldens` and `from tests.goldens import ...` work)."""
