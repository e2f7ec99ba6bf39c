"""Backends: how the generated code stores its tape and how it is compiled."""
