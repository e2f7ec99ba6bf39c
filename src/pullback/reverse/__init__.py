"""The reverse-mode transform: normalized program -> forward and reverse sweeps."""
