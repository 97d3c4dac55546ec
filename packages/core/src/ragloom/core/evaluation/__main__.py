"""``python -m ragloom.core.evaluation DATA_DIR [--mode keyword|dense|hybrid]``."""

import sys

from ragloom.core.evaluation.cli import main

sys.exit(main())
