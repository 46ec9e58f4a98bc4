"""The weights of an export: specs, reading, checks, random init, dtype conversion."""
