"""E0209: an import cycle.

Checked, and worded, in check/whole_file.py (`import_cycle`), which the Workspace split
moved out of workspace.py and still works on; its builder is to come here (until then
tests/test_codes.py allows the code there)."""
