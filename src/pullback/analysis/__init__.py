"""Pure analyses of the normalized program: kinds, activity, saves."""
