"""The weights of an export: where they come from, their checks, dtypes and random init."""
