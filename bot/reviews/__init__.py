"""Review mode: the final outcome at a pull request's head also submitted as a review.

decision  the review a final outcome becomes (pure)
submit    submitting it once, and dismissing the earlier ones
"""
