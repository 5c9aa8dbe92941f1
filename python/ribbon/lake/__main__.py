"""``python -m ribbon.lake build|update|query|info ...`` (ribbon.lake._cli)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
