"""pullback: reverse-mode AD of plain Python by source transformation."""
