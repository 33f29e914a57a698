"""Review mode: the final outcome at a pull request's head also submitted as a review."""
