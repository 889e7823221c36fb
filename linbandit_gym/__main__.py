"""``python -m linbandit_gym ...``: the ``linbandit`` command without the console script."""

import sys

from .specs import drop_current_directory_entry

drop_current_directory_entry()

# imported only once the working directory is off sys.path
from .cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
