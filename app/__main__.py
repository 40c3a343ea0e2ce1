"""`python -m treechat`: the same as the `treechat` command."""

import sys

from treechat.cli.main import main

sys.exit(main())
