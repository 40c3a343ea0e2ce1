"""`python -m treechat`: the same as the `treechat` command."""

import sys

from treechat.cli import main

sys.exit(main())
