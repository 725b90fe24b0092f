import sys

from flowbuilder.cli import main

sys.exit(main())
