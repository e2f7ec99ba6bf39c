"""Derivative rules, grouped by domain; importing this package registers them all."""
from . import registry, scalar  # noqa: F401
