"""The export checks E3301-E3306, run as the user types (no numpy): one module per family."""
