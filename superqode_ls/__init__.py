"""SuperQode LS: quality-engineering sessions in disposable sandboxes."""

__version__ = "0.1.0"
