"""`python -m kipwire.captures`: the `kipwire-capture` command line.

Also the script `spark-submit` runs (with kipwire on `--py-files`), hence the absolute import:
run as a file, it has no package to be relative to.
"""

import sys

from kipwire.captures.cli import main

sys.exit(main())
