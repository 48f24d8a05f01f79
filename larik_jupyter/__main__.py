from larik_jupyter.frontends.cli import main

raise SystemExit(main())
