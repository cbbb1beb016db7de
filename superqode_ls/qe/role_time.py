"""A role's time in a session (role_runs): how much earlier than the roles'
deadline a role is told to be done, how long a quick run's roles wait for
the project's environment being built, and the one line a role left for the
next run says."""

from __future__ import annotations

from pathlib import Path

from .report.verdict import PENDING

# The most of a session's budget its roles wait for the project's environment
# to be built: a first run on a fresh clone ends in time with what the other
# roles found, and the build goes on without the session (for the next run).
ENV_WAIT_SHARE = 1 / 3
# Past that share the wait goes on as long as the budget still leaves the
# tests this share of it (at most quick mode's own cap of the suite): a first
# run whose build ends by then runs the tests, part of the suite if it must,
# rather than none.
ENV_TEST_SHARE = 1 / 6
# The build goes on after this run ends, so its outcome is not known here: say
# what it builds, how long it may take and where it is logged (a build that
# fails is said by the next run too). The prefix makes the verdict no "pass".
ENV_DEFERRED = PENDING


def env_deferred(source: str | None, log: Path | None, limit_s: float) -> str:
    """The one line of a role left for the next run: what is being built,
    when a run can use it, where to look."""
    if source and len(source := source.replace("; ", ", ")) > 80:
        source = source[:77].rsplit(", ", 1)[0] + ", ..."  # (kombu's five requirements files)
    return (f"{PENDING}the project's environment is still being built"
            + (f" from {source}" if source else "")
            + "; the build goes on in the background and the next run after it ends runs them"
            + f" (it takes at most {_minutes(limit_s)}; progress in "
            + (str(log) if log else "logs/env-build.log in SuperQode's home") + ")")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def env_wait_until(now: float, told: float, budget: float, suite_cap: float) -> float:
    """Until when (loop time) a quick run's roles wait for the environment
    being built: ``told``, the roles' deadline, less the tests' time."""
    return max(now + budget * ENV_WAIT_SHARE, told - min(suite_cap, budget * ENV_TEST_SHARE))


# What a role is told of its time is short of the roles' deadline by this
# share of what is left when the roles start (at least FINISH_MIN_S): a role
# that stops at the deadline it was given then has its findings normalised
# and recorded (thousands, in a thread, at a loaded machine's pace) before
# the roles' phase ends, so running short of time costs what it did not
# reach, never the session's time-out. Only a role that does not return by
# the roles' deadline itself times the session out. At most FINISH_MAX_S:
# recording sqlalchemy's 17,600 lint findings takes 2-3 s at load 20, and a
# deep run's roles should not lose 45 s of its 30 minutes to it.
FINISH_SHARE, FINISH_MIN_S, FINISH_MAX_S = 0.03, 1.0, 5.0


def finish_reserve(left: float) -> float:
    """How much earlier than the roles' deadline (``left`` seconds away) a
    role is told to be done."""
    return min(FINISH_MAX_S, max(FINISH_MIN_S, FINISH_SHARE * max(0.0, left)))
