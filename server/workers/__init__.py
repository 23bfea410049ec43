"""``pineapple serve --workers N``: a supervisor process and N worker processes.

A path says which process runs a line:

    supervisor/   the supervisor: its processes (``_supervisor``), its config and
                  publishing authority (``_authority``), the store's publishing
                  side (``_publishing``), trial builds (``_trial``), held-back
                  publishes (``_staging``), unowned store directories
                  (``_stale_dirs``)
    worker/       each worker: its start (``_main``), its way to the supervisor
                  (``_supervisor_link``), the thread that maps new generations
                  (``_follower``), the store's mapping side (``_mapping``)
    _store_format, _control, _config_leases, _liveness
                  what both sides open: the shared-snapshot store's layout, the
                  control channel, the config-generation leases, the heartbeat pipe

Outside this package only ``server/_run.py`` knows the mode: it calls
:func:`run_supervisor` when ``workers > 1``. Everything else asks the one
``Decisions`` interface (``server/_decisions.py``).
"""

from .supervisor import run_supervisor as run_supervisor

__all__ = ["run_supervisor"]
