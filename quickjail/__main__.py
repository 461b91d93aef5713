"""``python -m quickjail``: the same as the ``quickjail`` console script."""

from quickjail._cli import main

raise SystemExit(main())
