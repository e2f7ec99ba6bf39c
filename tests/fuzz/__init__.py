"""Random-program tests: a grammar of small numeric functions checked against
finite differences on both backends (see grammar.py and oracle.py)."""
