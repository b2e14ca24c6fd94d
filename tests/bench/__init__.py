"""`make bench`: every figure measured as a ratio against a baseline taken in the same run."""
