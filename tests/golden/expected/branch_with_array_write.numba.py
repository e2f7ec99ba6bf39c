# the transform raised SyntaxError:
# invalid syntax (<unknown>, line 1)
