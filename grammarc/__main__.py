import sys

from grammarc.cli import main

sys.exit(main())
