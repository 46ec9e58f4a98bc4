"""E0207: recursion (a function that calls itself, directly or through others).

Checked, and worded, in check/whole_file.py (`recursion`), which the Workspace split
moved out of workspace.py and still works on; its builder is to come here (until then
tests/test_codes.py allows the code there)."""
