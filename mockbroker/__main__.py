"""`python -m kipwire.mockbroker serve ...`: the same as `kipwire-broker`."""

import sys

from .cli import main

sys.exit(main())
