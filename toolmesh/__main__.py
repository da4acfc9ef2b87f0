"""`python -m toolmesh` is the `toolmesh` command."""

import sys

from toolmesh.cli import main

sys.exit(main())
