"""`python -m kipwire.captures`: the `kipwire-capture` command line."""

import sys

from .cli import main

sys.exit(main())
