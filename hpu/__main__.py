import sys

from hpu.cli import main

sys.exit(main())
