"""A discrete-event simulation of how TorchScript runs a fork/join program on a few cores.

Why it exists: counting threads (``P = min(CPUs / intra-op, inter-op + 1)``) predicted
1.00x where 1.71-1.76x was measured, and 2.00x where 1.2-1.4x was. What decides the
speed-up is how the interpreter schedules tasks and how many cores each running op
really keeps busy. This module plays that out, with no torch and no graph: the input
is a :class:`Program` (one list of steps per task), the output a :class:`Schedule`.

What it models (``torch/csrc/jit/runtime/interpreter.cpp``, and the measured facts in
the project's parallelism notes):

* the **caller** runs the entry program on its own thread; ``fork`` puts a task on the
  **inter-op pool**'s queue (FIFO) and goes on; ``interop`` pool threads take tasks
  from the queue;
* ``wait`` on a task that is done goes on at once. On a task still running, the
  frame **suspends**: a pool thread is freed at once (it takes the next queued task),
  and when the task completes the frame's continuation is queued on the pool - so
  the rest of a suspended frame runs on a pool thread. The caller's own thread
  stays blocked until the call returns (it never takes pool work);
* a wait that **races** a task of about the same length (the task ended less than
  ``race`` of its own duration before the wait) is counted as lost - it suspends as if
  the task were still running. Ops vary by several per cent from call to call, so such
  a race is a coin toss, and one lost race moves the caller's frame onto the pool for
  the rest of the call: with one inter-op thread the seed's BiFork ensemble measured
  1.08-1.16x (lost) where a won race gives 1.9x;
* a :class:`Run` is a stretch of ops that takes ``us`` microseconds when it runs
  alone and meanwhile keeps ``cores`` cores busy (its intra-op threads, OpenMP's
  spinning included). Running stretches share the CPUs: when the cores they ask for
  add up to more than ``cpus``, every one progresses at ``cpus / demand`` of its
  speed (processor sharing).

:func:`simulate` returns the time the entry program ends; :func:`speedup` compares it
with the serial time (every stretch one after another, alone).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

__all__ = ["Run", "Fork", "Wait", "Program", "Schedule", "simulate", "speedup", "serial_us",
           "MAIN"]

MAIN = "main"


@dataclass(frozen=True)
class Run:
    """Ops that take ``us`` alone and keep ``cores`` cores busy while they run."""

    us: float
    cores: float = 1.0


@dataclass(frozen=True)
class Fork:
    """Start task ``task`` (an instance: each id is forked at most once)."""

    task: str


@dataclass(frozen=True)
class Wait:
    """Wait for task ``task``."""

    task: str


#: task id -> its steps; the entry program is :data:`MAIN`
Program = dict


@dataclass
class Segment:
    """One stretch as it ran: which task, on which thread, when."""

    task: str
    thread: str      # "caller" or "pool N"
    start_us: float
    end_us: float


@dataclass
class Schedule:
    """What :func:`simulate` found."""

    #: when the entry program ended
    makespan_us: float
    #: every task's end (tasks never waited may end after the entry program)
    ends: dict[str, float] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    #: the most stretches that ran at the same time
    max_running: int = 0


class _Frame:
    __slots__ = ("task", "pc", "left", "thread", "waking")

    def __init__(self, task: str):
        self.task, self.pc, self.left, self.thread, self.waking = task, 0, 0.0, None, False


def serial_us(program: Program) -> float:
    """Every stretch of every task one after another, each alone (the serial baseline)."""
    return sum(s.us for steps in program.values() for s in steps if isinstance(s, Run))


#: a wait this close (a share of the task's duration) after the task's end suspends
RACE = 0.05


def simulate(program: Program, interop: int, cpus: float, main: str = MAIN,
             race: float = RACE, wake_us: float = 0.0, warm_us: float | None = None,
             pool_speed: float = 1.0, max_events: int = 1_000_000) -> Schedule:
    """Run ``program`` on a caller thread plus ``interop`` pool threads over ``cpus`` cores.

    ``wake_us``: how long a sleeping pool thread takes to start a queued frame (a task or
    a continuation), and the blocked caller to return once its frame has ended on the
    pool - no core is busy meanwhile (a thread woken through the scheduler).
    ``warm_us``: the same for a pool thread that ended its work at the instant it takes
    the frame (the continuation of a wait on its task, or a task queued behind the one it
    ran): c10's pool loop finds the frame queued without sleeping. None: ``wake_us`` (the
    static model, and the calibration from the trivial wake-up probe, which charge every
    start alike); the calibration fitted to the hand-off probe charges 0.
    ``pool_speed``: how much faster a Run goes on a pool thread than on the caller (the
    calibration measures it: :func:`irviz.measure.child.make_pool_pair`; 1 statically).
    """
    if warm_us is None:
        warm_us = wake_us
    if interop < 1 or cpus <= 0 or pool_speed <= 0:
        raise ValueError("interop must be >= 1, cpus > 0 and pool_speed > 0")
    now = 0.0
    queue: deque[_Frame] = deque()
    idle = [f"pool {i}" for i in range(interop)]
    idle.reverse()
    running: list[_Frame] = []                 # frames inside a Run
    waiting: dict[str, list[_Frame]] = {}      # task -> frames suspended on it
    done: dict[str, float] = {}
    started: set[str] = set()
    began: dict[str, float] = {}               # task -> when a pool thread first took it
    result = Schedule(0.0)
    seg_start: dict[int, float] = {}
    main_moved = [False]                       # the entry frame went on on the pool
    idle_since: dict[str, float] = {}          # pool thread -> when it last went idle

    def release(thread: str) -> None:
        if thread != "caller":
            idle.append(thread)
            idle_since[thread] = now

    def advance(frame: _Frame) -> None:
        """Step ``frame`` through instant steps until it runs, suspends or ends."""
        if frame.waking:
            frame.left = wake_us
            running.append(frame)
            seg_start[id(frame)] = now
            return
        steps = program.get(frame.task, [])
        while frame.pc < len(steps):
            step = steps[frame.pc]
            if isinstance(step, Run):
                if step.us <= 0:
                    frame.pc += 1
                    continue
                frame.left = step.us
                running.append(frame)
                seg_start[id(frame)] = now
                return
            frame.pc += 1
            if isinstance(step, Fork):
                if step.task in started:
                    raise ValueError(f"task {step.task!r} forked twice")
                started.add(step.task)
                queue.append(_Frame(step.task))
            elif isinstance(step, Wait):
                end = done.get(step.task)
                lost = end is not None and now - end < race * (end - began.get(step.task, end))
                if end is None or lost:
                    if frame.task == main:
                        main_moved[0] = True
                    release(frame.thread)   # a pool thread is free; the caller is blocked
                    frame.thread = None
                    if lost:
                        queue.append(frame)
                    else:
                        waiting.setdefault(step.task, []).append(frame)
                    return
        done[frame.task] = now
        result.ends[frame.task] = now
        release(frame.thread)
        frame.thread = None
        for resumed in waiting.pop(frame.task, []):
            queue.append(resumed)           # the continuation goes to the pool

    def pace(frame: _Frame, rate: float) -> float:
        """How fast ``frame`` progresses: a wake-up at wall speed, a Run at the share of
        the cores it gets, faster or slower on a pool thread."""
        if frame.waking:
            return 1.0
        return rate * (1.0 if frame.thread == "caller" else pool_speed)

    main_frame = _Frame(main)
    main_frame.thread = "caller"
    started.add(main)
    advance(main_frame)
    for _ in range(max_events):
        while queue and idle:               # idle pool threads take queued work, FIFO
            frame = queue.popleft()
            frame.thread = idle.pop()           # the thread idle the shortest time
            wake = warm_us if idle_since.get(frame.thread) == now else wake_us
            began.setdefault(frame.task, now + wake)
            frame.waking = wake > 0
            advance(frame)
        if main in done:
            break
        if not running:
            raise ValueError("the program cannot finish: a wait on a task never forked")
        demand = sum(0.0 if f.waking else program[f.task][f.pc].cores for f in running)
        rate = min(1.0, cpus / demand) if demand > 0 else 1.0
        result.max_running = max(result.max_running, len(running))
        step_us = min(f.left / pace(f, rate) for f in running)
        now += step_us
        finished = []
        for f in running:
            f.left -= step_us * pace(f, rate)
            if f.left <= 1e-9:
                finished.append(f)
        for f in finished:
            running.remove(f)
            start = seg_start.pop(id(f))
            if f.waking:
                f.waking = False
            else:
                result.segments.append(Segment(f.task, f.thread, start, now))
                f.pc += 1
            advance(f)
    else:
        raise ValueError("the simulation did not finish")
    # a frame that ended on a pool thread still has to wake the blocked caller
    result.makespan_us = done[main] + (wake_us if main_moved[0] else 0.0)
    return result


def speedup(program: Program, interop: int, cpus: float, serial: float | None = None) -> float:
    """Serial time / simulated time (``serial``: the baseline's time, else :func:`serial_us`)."""
    span = simulate(program, interop, cpus).makespan_us
    base = serial_us(program) if serial is None else serial
    return base / span if span > 0 else 1.0
