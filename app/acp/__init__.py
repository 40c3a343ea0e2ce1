"""`treechat acp`: treechat as an Agent Client Protocol agent, for editors (Zed, JetBrains, Toad).

A front end like the app and print mode, on the same controller (`treechat.chat.Chat`), built on
the official `agent-client-protocol` package: run.py (the command), wire.py (the stdio framing,
bounded), agent.py (the methods), session.py (one session's turns), stream.py (a run as session
updates), history.py (a session replayed), permissions.py (the questions), editor.py (the
editor's files and terminal for the tools), prompt.py (a prompt's blocks), options.py (model and
thinking), servers.py (the editor's MCP servers), calls.py (a tool call as an editor shows it).
Nothing here is imported by the other commands: the package loads only for `treechat acp`.
"""
