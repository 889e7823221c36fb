"""``python -m linbandit_gym ...``: the ``linbandit`` command without the console script."""

import sys

from .specs import drop_current_directory_entry

drop_current_directory_entry()

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
