"""server/progress.py: work-done progress of a run; counts coalesced, the latest never lost."""

from __future__ import annotations


def test_count_reports_are_coalesced_and_the_latest_is_never_lost():
    """On the loop's own clock, moved by hand: how loaded the machine is
    (how long a burst takes, when a sleep wakes) changes nothing."""
    import asyncio
    from types import SimpleNamespace

    from superqode_ls.server import progress as progress_mod
    from superqode_ls.server.progress import RunProgress

    sent: list[str] = []
    arrived = asyncio.Event()

    def got(message: str) -> None:
        sent.append(message)
        arrived.set()

    wdp = SimpleNamespace(report=lambda token, value: got(value.message),
                          end=lambda token, value: got(f"end: {value.message}"), tokens={})
    ls = SimpleNamespace(work_done_progress=wdp)
    interval = progress_mod.COUNT_INTERVAL_S

    async def go():
        loop = asyncio.get_running_loop()
        clock = [loop.time()]
        loop.time = lambda: clock[0]  # type: ignore[method-assign]  # timers follow it too

        async def after(seconds: float) -> None:
            """Move the clock on and let every timer due by then run."""
            clock[0] += seconds
            for _ in range(3):  # the timer's turn comes after ours in one loop pass
                await asyncio.sleep(0)

        p = RunProgress(ls, "t", lambda: None)
        p.active = True
        for n in range(1, 501):  # a role's findings in one burst
            p.report(f"{n} finding(s)", now=False)
        assert sent == ["1 finding(s)"]
        arrived.clear()
        clock[0] += interval
        await arrived.wait()  # the pending count's timer fires once the interval is up
        assert sent == ["1 finding(s)", "500 finding(s)"]  # the latest, never an older one
        await after(2 * interval)
        p.report("501 finding(s)", now=False)  # a quiet while since the last one: at once
        p.report("502 finding(s)", now=False)
        p.report("role ok", now=True)  # role start/complete never wait, and supersede counts
        await after(2 * interval)
        assert sent[2:] == ["501 finding(s)", "role ok"]
        p.report("503 finding(s)", now=False)
        p.report("504 finding(s)", now=False)
        p.end("done")  # nothing pending fires after the end
        await after(2 * interval)
        assert sent[4:] == ["503 finding(s)", "end: done"]

    asyncio.run(go())
