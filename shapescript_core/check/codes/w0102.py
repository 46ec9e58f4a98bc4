"""W0102: a param field that no exported function reads.

Checked, and worded, in check/whole_file.py (`unread_fields`), which the Workspace split
moved out of workspace.py and still works on; its builder is to come here (until then
tests/test_codes.py allows the code there)."""
