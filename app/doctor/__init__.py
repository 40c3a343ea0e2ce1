"""`treechat doctor`: the checks, the report, the server and terminal lines."""
