"""The protocols other programs speak to treechat: Pi 0.73.1's `--mode json` event stream and
`--mode rpc` (its JSON protocol over stdin/stdout). The event mapping (`pi_events.py`) is shared
by both; `json_mode.py` is `-p --mode json`, `rpc/` the RPC server (framing, commands, dispatch,
approvals as requests to the client). Built on the controller (`treechat.chat.Chat`) and the
`AgentSession` it makes, like the other front ends."""
