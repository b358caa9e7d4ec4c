"""One module per ``credence`` subcommand: ``add_parser(subparsers)`` sets ``run``."""
