"""``python -m fuzz``: see :mod:`fuzz.run`."""

import sys

from fuzz.run import main

sys.exit(main())
