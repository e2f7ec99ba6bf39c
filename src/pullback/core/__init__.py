"""The bottom layer: errors, the IR, kinds, fresh names and the run-time helpers.

Nothing here imports any other part of pullback.
"""
