"""A failure's exception chain, as evidence of its cause.

Needs the standard library only: it is copied beside the pytest recorder
(``_pytest_plugin.py``) and the Django runner (``_django_runner.py``) into
the run's private folder as ``superqode_failure_chain`` and imported there
by the project's interpreter; both write the same records, which the unit
role reads (``_unit_cause.py``)."""

CHAIN_MODULE = "superqode_failure_chain"


def chain(exc):
    """The exception and the ones it was raised from or during (``raise ...
    from``, a handler's own error): for each, its class with the classes it
    derives from, its errno and file name, and the file and function that
    raised it. The unit role reads a failure's cause from this evidence
    (an OSError from the network stack, a client library's error) rather
    than from the words of a message."""
    out = []
    seen = set()
    while exc is not None and id(exc) not in seen and len(out) < 6:
        seen.add(id(exc))
        try:
            mro = [f"{c.__module__}.{c.__qualname__}" for c in type(exc).__mro__][:12]
            tb = exc.__traceback__
            where = name = None
            while tb is not None:
                where, name = tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name
                tb = tb.tb_next
            errno = getattr(exc, "errno", None)
            filename = getattr(exc, "filename", None)
            out.append({
                "mro": mro,
                "errno": errno if isinstance(errno, int) else None,
                "filename": str(filename)[:300] if isinstance(filename, (str, bytes)) else None,
                "where": where, "function": name,
            })
        except Exception:  # noqa: BLE001 - a strange exception must not break the run
            break
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    return out
