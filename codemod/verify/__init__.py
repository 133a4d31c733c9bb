"""Verify: prove that a change leaves generation unchanged, by running old and new code side by side."""
