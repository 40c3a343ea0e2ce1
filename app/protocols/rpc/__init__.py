"""Pi's RPC protocol over stdin/stdout (docs/rpc.md of Pi 0.73.1), and treechat's tree and approvals on it."""
