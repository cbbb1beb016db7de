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


def _counts(messages: list[str]) -> list[tuple[int, int]]:
    import re

    out = []
    for m in messages:
        hit = re.search(r"(\d+)/(\d+) roles done", m)
        if hit:
            out.append((int(hit.group(1)), int(hit.group(2))))
    return out


def _trust_split_run(answer: list[str] | None) -> list[str]:
    """The progress a run split by trust shows: lint and security run at once
    beside the question, unit_tester waits for it (skipped in the first
    phase), then runs in a second phase, or (``answer`` None) never."""
    import asyncio
    from types import SimpleNamespace

    from superqode_ls.events import EventBus
    from superqode_ls.server.progress import RunProgress
    from superqode_ls.server.registry import Run
    from superqode_ls.server.run_events import on_event

    sent: list[str] = []
    wdp = SimpleNamespace(report=lambda token, value: sent.append(value.message),
                          end=lambda token, value: sent.append(f"end: {value.message}"), tokens={})
    ls = SimpleNamespace(work_done_progress=wdp, publisher=SimpleNamespace(flush=lambda now=False: None),
                         log=lambda *a, **k: None)

    async def go():
        run = Run(id="r", folder="/f", files=None, mode="quick", roles=None, trigger="command")
        run.only_roles = {"lint_tester", "security_tester"}
        run.next_roles = asyncio.get_running_loop().create_future()
        p = RunProgress(ls, "t", lambda: None)
        p.active = True
        bus = EventBus("r")
        bus.subscribe(lambda e: on_event(ls, run, p, e))
        bus.emit("session_start", roles=["lint_tester", "security_tester", "unit_tester"])
        for role in ("lint_tester", "security_tester"):
            bus.emit("role_start", role=role)
        bus.emit("role_complete", role="unit_tester", status="skipped", findings=0,
                 reason="the folder is not trusted")
        for role in ("lint_tester", "security_tester"):
            bus.emit("role_complete", role=role, status="ok", findings=1)
        if answer is None:
            p.none_left()
        else:
            run.only_roles = set(answer)
            bus.emit("session_start", roles=answer)
            bus.emit("role_start", role="unit_tester")
            bus.emit("role_complete", role="unit_tester", status="ok", findings=0)
        p.report(p.status())

    asyncio.run(go())
    return sent


def test_a_run_split_by_trust_counts_its_roles_once_and_forward():
    """Issue 29: "3/3" then "3/4" when the trusted role joined; the total is
    known from the first report and the count only goes up."""
    for answer in (["unit_tester"], None):
        sent = _trust_split_run(answer)
        counts = _counts(sent)
        assert counts, "no role counts reported"
        assert {total for _, total in counts} == {3}, counts
        done = [d for d, _ in counts]
        assert done == sorted(done) and done[-1] == 3, counts
        if answer:  # "all done" only once the trusted role is
            first_all = next(m for m in sent if "3/3 roles done" in m)
            assert first_all.startswith("unit_tester ok"), sent
