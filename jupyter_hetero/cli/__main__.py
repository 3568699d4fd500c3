"""`python -m jupyter_hetero.cli` is `jupyter hetero`."""

from .main import main

raise SystemExit(main())
