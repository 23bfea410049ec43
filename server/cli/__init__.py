"""The subcommands this package adds to ``pineapple``: the top floor of ``server``.

``_commands`` (the ``pineapple.commands`` entry point) assembles ``_cli``
(``serve`` and ``check``, with ``_cpu_quota`` for ``--workers auto``),
``_run_cli`` (``run``, printing Go's indented JSON with ``_json_indent``) and
``_admin_cli`` (``admin``, printing for people with ``_admin_view``).
``_go_commands`` holds the ``pineapple-server`` and ``pineapple-run`` console
scripts (the Go tools' command lines, read by ``_go_flags``, onto ``serve``
and ``run``). Every module is private.
"""
