"""A worker's long-polls on several queues: one answering leaves the others open, and what one of
them brings while no wait holds it is handed back at once, never left running for nobody."""

from __future__ import annotations

import asyncio

from jobledger.worker.long_polls import LongPolls
from jobledger.worker.transports import Assignment


class Polls:
    """Long-polls the test answers by hand: ``started`` counts each queue's, ``returned`` holds
    the jobs handed back."""

    def __init__(self) -> None:
        self.waiting: dict[str, asyncio.Future[list[Assignment]]] = {}
        self.started: dict[str, int] = {}
        self.returned: list[int] = []
        self.polls = LongPolls(self.hand_back)

    async def start(self, queue: str, count: int) -> list[Assignment]:
        self.started[queue] = self.started.get(queue, 0) + 1
        self.waiting[queue] = asyncio.get_running_loop().create_future()
        return await self.waiting[queue]

    async def hand_back(self, jobs: list[Assignment]) -> None:
        self.returned += [job.id for job in jobs]

    def answer(self, queue: str, *ids: int) -> None:
        self.waiting.pop(queue).set_result([Assignment(queue, i, 1, None) for i in ids])

    def first_answers(self, stopping: asyncio.Event | None = None) -> asyncio.Task[list[Assignment]]:
        return asyncio.ensure_future(
            self.polls.first_answers(["a", "b"], 1, self.start, stopping or asyncio.Event())
        )

    async def a_answered_first(self, stopping: asyncio.Event | None = None) -> list[int]:
        """A wait on both queues, ended by job 1 on ``a``: what it gave."""
        wait = self.first_answers(stopping)
        await turns()
        self.answer("a", 1)
        return [job.id for job in await wait]


async def turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_a_poll_left_open_that_answers_while_nobody_waits_hands_its_jobs_back() -> None:
    async def run() -> None:
        p = Polls()
        assert await p.a_answered_first() == [1]
        assert p.polls.is_open("b") and not p.polls.is_open("a")
        p.answer("b", 2)  # the server fetched job 2 for the worker, busy with job 1
        await turns()
        assert p.returned == [2] and not p.polls.is_open("b")
        await p.polls.close()

    asyncio.run(run())


def test_the_next_wait_takes_up_a_poll_left_open() -> None:
    async def run() -> None:
        p = Polls()
        await p.a_answered_first()
        second = p.first_answers()
        await turns()
        assert p.started == {"a": 2, "b": 1}  # b's poll was not opened twice
        p.answer("b", 2)
        assert [j.id for j in await second] == [2]
        assert p.returned == []
        assert p.polls.is_open("a")
        await p.polls.close()
        assert not p.polls.is_open("a")

    asyncio.run(run())


def test_a_poll_that_answers_as_the_next_wait_begins_is_taken_by_it_and_not_handed_back() -> None:
    async def run() -> None:
        p = Polls()
        await p.a_answered_first()
        p.answer("b", 2)
        second = p.first_answers()  # in the same turn: the poll ends after the wait holds it
        await turns()
        assert [j.id for j in await second] == [2]
        p.answer("a")
        await turns()
        assert p.returned == [] and p.started == {"a": 2, "b": 1}
        await p.polls.close()

    asyncio.run(run())


def test_stopping_cancels_the_polls_and_empty_answers_end_the_wait() -> None:
    async def run() -> None:
        p = Polls()
        stopping = asyncio.Event()
        wait = p.first_answers(stopping)
        await turns()
        stopping.set()
        assert await wait == []
        assert not p.polls.is_open("a") and not p.polls.is_open("b")
        assert all(f.cancelled() for f in p.waiting.values())

        again = p.first_answers()
        await turns()
        p.answer("a")
        p.answer("b")
        assert await again == []
        assert p.returned == []

    asyncio.run(run())


def test_a_cancelled_wait_cancels_its_polls() -> None:
    async def run() -> None:
        p = Polls()
        wait = p.first_answers()
        await turns()
        wait.cancel()
        await asyncio.gather(wait, return_exceptions=True)
        assert not p.polls.is_open("a") and not p.polls.is_open("b")
        assert p.returned == []

    asyncio.run(run())


def test_the_polls_left_open_are_cancelled_when_the_worker_stops() -> None:
    """Not at close, after the grace period: a poll left open meanwhile would fetch jobs only to hand
    them back."""

    async def run() -> None:
        p = Polls()
        stopping = asyncio.Event()
        await p.a_answered_first(stopping)
        left = p.waiting["b"]
        stopping.set()
        await turns()
        assert left.cancelled() and not p.polls.is_open("b")
        assert p.returned == []
        await p.polls.close()

    asyncio.run(run())
