"""`python -m kipwire.demo`: the demo (`make demo`)."""

import sys

from kipwire.demo.cli import main

sys.exit(main())
