"""`python -m goldset_client ...` is the `goldset` command."""

from goldset_client.cli import main

raise SystemExit(main())
