from larik_jupyter.cli import main

raise SystemExit(main())
