"""The command line: `treechat` and its subcommands, and print mode (`-p`)."""
