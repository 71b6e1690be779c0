"""Scheduled prompts: a prompt someone asked for later is answered anew in its thread, attributed
to them ("[scheduled by Alice]"), answered there like any other message; its approvals go to
that person.

The schedules live in the store (:mod:`bot.scheduler.schedules`); each has a job that wakes the
scheduler service when it is due. A run is claimed in the store before it starts, so a one-off
runs once; a one-off that came due while the bot was down runs once when it is back, and says it
is late; a recurring one runs once for all the occurrences it missed, then keeps its rhythm.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from zoneinfo import ZoneInfo

from bot.api.inbound import SCHEDULED_BY, Author, ThreadKey
from bot.api.surface import Surface
from bot.config import Settings
from bot.errors import Refused, SurfaceError
from bot.infra.clock import Clock
from bot.llm.messages import UserMessage
from bot.policy.who import Policy
from bot.scheduler.jobs import Job
from bot.scheduler.schedules import PROMPT_JOB, Schedule, ScheduleStore
from bot.scheduler.service import Scheduler
from bot.scheduler.when import local_time, next_run, read_when
from bot.thread.reach import Surfaces

log = logging.getLogger(__name__)

LATE_AFTER_S = 60.0
"""A run that starts this long after its time says it is late."""
_LATE = "\n\n(This scheduled prompt was due "
"""How a late run's message says so, after the prompt."""
_EVENT = "schedule:"
"""How the event id of a scheduled prompt's message begins."""
UNREACHABLE_RETRY_S = 60.0
"""A thread no adapter reaches now (its platform not connected yet) is tried again this much later."""
MAX_PROMPT_CHARS = 4000
CACHED_THREADS = 1024

Answer = Callable[[ThreadKey, UserMessage, Author, Surface, str], Awaitable[object]]
"""Answers a run's message (accepted with the claim of the run) anew in its thread, with
a notice shown first (``Core.scheduled_answer``)."""


class PromptSchedules:
    def __init__(
        self,
        settings: Settings,
        store: ScheduleStore,
        scheduler: Scheduler,
        clock: Clock,
        surfaces: Surfaces,
        answer: Answer,
        policy: Policy,
    ) -> None:
        self._settings = settings
        self._policy = policy
        self._store = store
        self._scheduler = scheduler
        self._clock = clock
        self._surfaces = surfaces
        self._answer = answer
        self.zone = ZoneInfo(settings.timezone)
        self._ids: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        scheduler.handle(PROMPT_JOB, self._run)

    # --- what the model and people ask for ---

    async def create(self, key: str, author: Author, prompt: str, when: str) -> Schedule:
        """Schedule ``prompt`` in the thread ``key`` for ``author``; :class:`Refused` says why not."""
        prompt = prompt.strip()
        if not prompt:
            raise Refused("the prompt is empty: say what should be done when it runs.")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise Refused(
                f"the prompt is {len(prompt):,} characters; at most {MAX_PROMPT_CHARS:,}."
            )
        settings, now = self._settings, self._clock.now()
        timing = read_when(when, now, self.zone, min_interval_s=settings.schedule_min_interval_s)
        draft = Schedule(
            "",
            key,
            self._surfaces.channel_of(key),
            prompt,
            when.strip(),
            timing.cron,
            self.zone.key,
            timing.first_at,
            author.id,
            _person(author.display_name),
            now,
        )
        added = await self._store.add_schedule(
            draft,
            per_thread=settings.schedules_per_thread,
            per_channel=settings.schedules_per_channel,
        )
        if added == "thread":
            raise Refused(
                f"this thread already has {settings.schedules_per_thread} schedules, the most "
                "allowed (THREADLINE_SCHEDULES_PER_THREAD); cancel one first."
            )
        if added == "channel":
            raise Refused(
                f"this channel already has {settings.schedules_per_channel} schedules, the most "
                "allowed (THREADLINE_SCHEDULES_PER_CHANNEL); cancel one first."
            )
        self._scheduler.notify(added.next_at)
        self._remember_ids(key, (*self.cached_ids(key), added.id))
        log.info("schedule %s in %s by %s: %s", added.id, key, author.id, added.when)
        return added

    async def of_thread(self, key: str) -> list[Schedule]:
        found = await self._store.schedules_of(key)
        self._remember_ids(key, tuple(s.id for s in found))
        return found

    async def cancel(self, key: str, schedule_id: str) -> Schedule:
        """Cancel the thread's schedule ``schedule_id``; :class:`Refused` when it has none such."""
        removed = await self._store.delete_schedule(key, schedule_id.strip())
        if removed is None:
            left = ", ".join(s.id for s in await self.of_thread(key)) or "none"
            raise Refused(f"this thread has no schedule {schedule_id!r}; its schedules: {left}.")
        self._remember_ids(key, tuple(i for i in self.cached_ids(key) if i != removed.id))
        log.info("schedule %s in %s cancelled", removed.id, key)
        return removed

    # --- what the tools offer (read at a run's first model call) ---

    async def refresh(self, key: str, *, again: bool = True) -> None:
        """Read the thread's schedule ids again (the cancel tool offers those); without
        ``again``, only when they are not known here (every change this process makes keeps
        them up to date)."""
        if again or key not in self._ids:
            await self.of_thread(key)

    def cached_ids(self, key: str) -> tuple[str, ...]:
        """The thread's schedule ids as last read."""
        return self._ids.get(key, ())

    def _remember_ids(self, key: str, ids: tuple[str, ...]) -> None:
        self._ids[key] = ids
        self._ids.move_to_end(key)
        while len(self._ids) > CACHED_THREADS:
            self._ids.popitem(last=False)

    # --- words ---

    def describe(self, schedule: Schedule) -> str:
        """One line: id, next run, rhythm, who, what."""
        zone = ZoneInfo(schedule.zone)
        rhythm = f"repeats: cron `{schedule.cron}` ({schedule.zone})" if schedule.cron else "once"
        return (
            f"{schedule.id}: next {local_time(schedule.next_at, zone)}, {rhythm}, by "
            f"{schedule.author_name}: {_short(schedule.prompt, 200)}"
        )

    def now_line(self) -> str:
        return f"Now: {local_time(self._clock.now(), self.zone)} ({self.zone.key})."

    async def listing(self, key: str) -> str:
        """The thread's schedules, for people and for the model."""
        found = await self.of_thread(key)
        if not found:
            return f"No scheduled prompts in this thread. {self.now_line()}"
        limit = self._settings.schedules_per_thread
        lines = [
            f"Scheduled prompts in this thread ({len(found)} of at most {limit}). {self.now_line()}"
        ]
        lines.extend(f"- {self.describe(s)}" for s in found)
        return "\n".join(lines)

    # --- running ---

    async def _run(self, job: Job) -> float | None:
        """The job of one schedule came due: claim the run, then start its answer."""
        schedule = await self._store.get_schedule(str(job.payload.get("schedule_id", "")))
        if schedule is None:
            return None  # cancelled, or a one-off that already ran
        now = self._clock.now()
        if schedule.next_at > now:
            return schedule.next_at  # the job was behind its schedule
        try:
            surface = self._surfaces.surface_for(ThreadKey(schedule.key))
        except SurfaceError as exc:
            log.warning("schedule %s: %s; trying again shortly", schedule.id, exc)
            surface = None
        if surface is None:
            log.warning(
                "schedule %s: nothing reaches %s now; trying again shortly",
                schedule.id,
                schedule.key,
            )
            return now + UNREACHABLE_RETRY_S
        following = next_run(schedule.cron, ZoneInfo(schedule.zone), now) if schedule.cron else None
        key, late = ThreadKey(schedule.key), now - schedule.next_at > LATE_AFTER_S
        author = Author(schedule.author_id, SCHEDULED_BY + schedule.author_name)
        refused = self._policy.scheduled(author, schedule.key).reason
        message = UserMessage(
            text=self._text(schedule, late)[: self._settings.max_input_chars],
            author_id=schedule.author_id,
            author_name=SCHEDULED_BY + schedule.author_name,
            event_id=f"{_EVENT}{schedule.id}:{schedule.next_at:.3f}",
        )
        arrival = (
            None if refused is not None else (key, message)
        )  # stored with the claim: never lost
        if not await self._store.claim_schedule(schedule.id, schedule.next_at, following, arrival):
            return following  # another worker took this run
        if schedule.cron is None:
            self._remember_ids(
                schedule.key, tuple(i for i in self.cached_ids(schedule.key) if i != schedule.id)
            )
        if refused is not None:
            log.info("schedule %s not run: %s", schedule.id, refused)
            return following
        await self._answer(key, message, author, surface, self._notice(schedule, late))
        return following

    def _notice(self, schedule: Schedule, late: bool) -> str:
        words = _words(schedule.author_name, schedule.prompt)
        if not late:
            return words
        due = local_time(schedule.next_at, ZoneInfo(schedule.zone))
        missed = " (missed runs are not repeated)" if schedule.cron else ""
        return f"{words} — due {due}, running late: I was not running then{missed}."

    def _text(self, schedule: Schedule, late: bool) -> str:
        if not late:
            return schedule.prompt
        due = local_time(schedule.next_at, ZoneInfo(schedule.zone))
        return f"{schedule.prompt}{_LATE}{due}; it runs late because the bot was not running then.)"


def left_over_notice(message: UserMessage) -> str | None:
    """The notice of a scheduled prompt's message answered from where its run was claimed and
    stored (the process restarted, or the worker that claimed it died, before it was answered):
    who scheduled what. None for a message a person wrote."""
    if not (message.event_id or "").startswith(_EVENT):
        return None
    prompt, late, _ = message.text.partition(_LATE)
    words = _words((message.author_name or "").removeprefix(SCHEDULED_BY), prompt)
    return f"{words} — running late: I was not running when it was due." if late else words


def _words(name: str, prompt: str) -> str:
    return f"⏰ Scheduled by {name or 'someone'}: {_short(prompt, 200)}"


def _person(name: str) -> str:
    """The person behind a name (a prompt scheduled from a scheduled run is still theirs)."""
    while name.startswith(SCHEDULED_BY):
        name = name.removeprefix(SCHEDULED_BY)
    return name or "someone"


def _short(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
