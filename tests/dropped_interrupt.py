"""An object whose collection drops an interrupt, as Python does when Ctrl-C or SIGTERM lands in a
garbage-collection callback: its KeyboardInterrupt is reported and discarded, not raised
(audit.interrupts keeps it). Create one and let it go: `DroppingOnCollect()`."""


class DroppingOnCollect:
    def __del__(self):
        raise KeyboardInterrupt
