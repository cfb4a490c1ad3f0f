"""`python -m captures`: the `kipwire-capture` command line."""

import sys

from captures.cli import main

sys.exit(main())
