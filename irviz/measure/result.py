"""What a measurement found, as typed records: the schema of ``measured`` in the report.

Why it exists: the measurement's result travels from a child process (JSON) to the
report (JSON again), and its layout used to live in a docstring. Here each field is
declared once, with what it means; :meth:`MeasureResult.to_dict` gives the exact dict
``irviz report --format json`` writes under ``"measured"`` (``schema_version`` 3),
key order included. The ``from_child`` constructors read the child's JSON lines
(see :mod:`irviz.measure.child`).

Only the standard library is imported here (no torch): reading a result is cheap.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from .settings import Setting

__all__ = ["Stats", "BaselineInfo", "SettingResult", "BestSetting", "Task", "ProfileResult",
           "MeasureResult", "summarize"]

@dataclass
class Stats:
    """Per-call times of one variant (serial or forked) in one child, in seconds."""

    #: median wall time of one call
    median_s: float
    #: fastest sample, per call
    min_s: float
    #: slowest sample, per call
    max_s: float
    #: interquartile range of the samples (0.0 with one sample)
    spread_s: float
    #: every sample's wall time per call, in the order they ran (a sample is
    #: ``calls_per_sample`` calls back to back; schema 3 - it was one call in schema 2)
    runs: list[float]
    #: median process CPU time per call, all threads (None: CPU time not taken)
    cpu_median_s: float | None = None
    #: cpu_median_s / median_s: about 1.0 = no two threads ran at once (None: no wall time)
    cpu_per_wall: float | None = None

    @classmethod
    def from_dict(cls, d: dict) -> "Stats":
        return cls(d["median_s"], d["min_s"], d["max_s"], d["spread_s"], list(d["runs"]),
                   d.get("cpu_median_s"), d.get("cpu_per_wall"))

    def to_dict(self) -> dict:
        out = {"median_s": self.median_s, "min_s": self.min_s, "max_s": self.max_s,
               "spread_s": self.spread_s, "runs": list(self.runs)}
        if self.cpu_median_s is not None:
            out["cpu_median_s"] = self.cpu_median_s
            out["cpu_per_wall"] = self.cpu_per_wall
        return out


def summarize(runs: list[float], cpu: list[float] | None = None) -> Stats:
    """Median, min, max, interquartile range (``spread_s``) of per-call times; with
    ``cpu`` (CPU seconds per call) also the CPU median and CPU per wall second."""
    runs = [float(r) for r in runs]
    if len(runs) >= 2:
        q1, _, q3 = statistics.quantiles(runs, n=4, method="inclusive")
        spread = q3 - q1
    else:
        spread = 0.0
    median = statistics.median(runs)
    stats = Stats(median, min(runs), max(runs), spread, runs)
    if cpu:
        stats.cpu_median_s = statistics.median(cpu)
        stats.cpu_per_wall = round(stats.cpu_median_s / median, 3) if median > 0 else None
    return stats


def _stats(d: dict | None) -> Stats | None:
    return None if d is None else Stats.from_dict(d)


@dataclass
class BaselineInfo:
    """How the serial baseline was built (:mod:`irviz.ir.serial_baseline`)."""

    #: "inline" | "inline+completed" | "model-has-no-forks"
    method: str
    #: prim::fork nodes rewritten (after inlining)
    forks: int
    #: direct fork/wait pairs removed
    inlined: int
    #: forks kept as already-completed futures (their futures go into lists, loops, ...)
    completed: int

    @classmethod
    def from_dict(cls, d: dict) -> "BaselineInfo":
        return cls(d["method"], d["forks"], d["inlined"], d["completed"])

    def to_dict(self) -> dict:
        return {"method": self.method, "forks": self.forks, "inlined": self.inlined,
                "completed": self.completed}


#: the fields a timing child reports for its setting (the rest the parent knows)
_CHILD_ROW_FIELDS = ("intra_op", "inter_op", "serial", "forked", "speedup", "speedup_paired",
                     "outputs_match", "cpu_count", "load_avg", "other_load", "error",
                     "wake_us", "pair_s", "pool_pair_s", "calls_per_sample", "handoff")


@dataclass
class SettingResult:
    """One thread setting: serial vs forked, timed in one child process."""

    #: intra-op threads the child really had (the requested count if it never said)
    intra_op: int | None
    #: inter-op threads the child really had (the requested count if it never said)
    inter_op: int | None
    #: the setting asked for, (intra_op, inter_op); None = torch's default
    requested: tuple[int | None, int | None]
    #: the serial baseline's times (None: no baseline, or the child failed)
    serial: Stats | None = None
    #: the model's own (forked) times (None: the child failed)
    forked: Stats | None = None
    #: serial median / forked median
    speedup: float | None = None
    #: median of serial_i / forked_i over the rounds: robust when the load shifts mid-run
    speedup_paired: float | None = None
    #: the serial baseline's outputs equal the forked model's (None: not compared)
    outputs_match: bool | None = None
    #: CPUs the child could use
    cpu_count: int = 0
    #: the machine's load average [1 min, 5 min, 15 min] when the child started
    load_avg: list[float] | None = None
    #: CPUs other processes kept busy during the timing (/proc/stat; Linux only):
    #: 1.0 on 2 CPUs = 1 left
    other_load: float | None = None
    #: wall time of the child process, seconds
    child_s: float = 0.0
    #: one line: the model's exception, a crash, a timeout, "not run: ..." (None: timed)
    error: str | None = None
    #: remarks that do not make the row fail (e.g. the child aborted after its result)
    notes: list[str] = field(default_factory=list)
    #: the calibrated prediction of ``speedup``: the task DAG scheduled with op times and
    #: cores from this row's serial run (:mod:`irviz.analyses.prediction`; None: no serial run)
    predicted_speedup: float | None = None
    #: the static prediction for this setting (no run: op sizes and costs)
    static_predicted_speedup: float | None = None
    #: the forked model's predicted median: serial median / predicted_speedup
    predicted_forked_s: float | None = None
    #: how long waking a sleeping pool thread took in this child, microseconds (a probe)
    wake_us: float | None = None
    #: two calls of the serial baseline at once (two threads), median wall seconds,
    #: sampled in the same rounds as serial and forked
    pair_s: float | None = None
    #: two calls of the serial baseline forked onto the inter-op pool at once (the caller
    #: waits), median wall seconds, sampled in the same rounds: the busy pool threads'
    #: speed against the caller's (:func:`irviz.measure.child.make_pool_pair`)
    pool_pair_s: float | None = None
    #: calls back to back in one timed sample (at least ``min_sample_s`` of the slowest
    #: variant; None: not timed)
    calls_per_sample: int | None = None
    #: the hand-off probe, sampled in the same rounds (:mod:`irviz.measure.handoff_probe`):
    #: ``{"pairs", "steps", "serial_s", "forked_s"}``; None: not run
    handoff: dict | None = None
    #: the per-start cost fitted to the hand-off probe that the calibrated prediction
    #: charged, microseconds (None: no probe; ``wake_us`` was charged)
    handoff_wake_us: float | None = None
    #: how much faster the calibrated prediction ran ops on pool threads than on the
    #: caller, from ``pool_pair_s`` (1: no difference measured; None: not calibrated)
    pool_speed: float | None = None

    def take(self, result: dict) -> None:
        """Fill in what a timing child reported (its JSON object)."""
        for key in _CHILD_ROW_FIELDS:
            if key in result:
                value = result[key]
                setattr(self, key, _stats(value) if key in ("serial", "forked") else value)
        if result.get("notes"):
            self.notes = list(result["notes"])

    def to_dict(self) -> dict:
        out = {"intra_op": self.intra_op, "inter_op": self.inter_op,
               "requested": list(self.requested),
               "serial": None if self.serial is None else self.serial.to_dict(),
               "forked": None if self.forked is None else self.forked.to_dict(),
               "speedup": self.speedup, "speedup_paired": self.speedup_paired,
               "outputs_match": self.outputs_match, "cpu_count": self.cpu_count,
               "load_avg": self.load_avg, "other_load": self.other_load,
               "child_s": self.child_s, "error": self.error,
               "predicted_speedup": self.predicted_speedup,
               "static_predicted_speedup": self.static_predicted_speedup,
               "predicted_forked_s": self.predicted_forked_s, "wake_us": self.wake_us,
               "pair_s": self.pair_s, "pool_pair_s": self.pool_pair_s,
               "calls_per_sample": self.calls_per_sample,
               "handoff": self.handoff, "handoff_wake_us": self.handoff_wake_us,
               "pool_speed": self.pool_speed}
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass
class BestSetting:
    """The setting with the highest speed-up."""

    #: its intra-op threads (as the child had them)
    intra_op: int | None
    #: its inter-op threads (as the child had them)
    inter_op: int | None
    #: its speed-up (serial median / forked median)
    speedup: float
    #: its position in MeasureResult.settings
    index: int

    def to_dict(self) -> dict:
        return {"intra_op": self.intra_op, "inter_op": self.inter_op,
                "speedup": self.speedup, "index": self.index}


@dataclass
class Task:
    """One bar of the measured timeline: the top-level call or one forked task."""

    #: 0 = the calling (main) thread, 1.. = pool threads in order of first appearance
    lane: int
    #: the profiler event: "forward", "<forked function>", ...
    name: str
    #: start, microseconds from the start of the call
    start_us: float
    #: duration, microseconds
    dur_us: float
    #: what it runs, e.g. "cell_f: LSTM"; "<forked function>" when unknown
    label: str
    #: the fork call that started it, "file.py:LINE" (None: the main call, or unknown)
    site: str | None = None

    @classmethod
    def from_dict(cls, d: dict) -> "Task":
        return cls(d["lane"], d["name"], d["start_us"], d["dur_us"], d["label"], d.get("site"))

    def to_dict(self) -> dict:
        return {"lane": self.lane, "name": self.name, "start_us": self.start_us,
                "dur_us": self.dur_us, "label": self.label, "site": self.site}


#: the keys of a profile the child completed, in the order it reports them
_PROFILE_KEYS = ("error", "intra_op", "inter_op", "cpu_count", "load_avg", "model", "mode",
                 "chrome_trace", "tasks", "sites")


@dataclass
class ProfileResult:
    """One profiled forked call (:func:`irviz.measure.profile`)."""

    #: None, or one line: why there is no profile ("profiling failed: ...", "not run: ...")
    error: str | None = None
    #: intra-op threads of the profiled child (the requested count if it never started)
    intra_op: int | None = None
    #: inter-op threads of the profiled child (the requested count if it never started)
    inter_op: int | None = None
    #: CPUs the child could use (None: the child did not report)
    cpu_count: int | None = None
    #: the machine's load average when the child started (None: unknown)
    load_avg: list[float] | None = None
    #: the model's name (None: the child did not get that far)
    model: str | None = None
    #: how it was captured: "script" | "trace" | "archive"
    mode: str | None = None
    #: torch.profiler's Chrome/Perfetto trace (JSON object); the report leaves it out
    chrome_trace: dict | None = None
    #: the timeline: the main call (lane 0) and every forked task
    tasks: list[Task] = field(default_factory=list)
    #: "file.py:LINE" -> label of every fork site of the model
    sites: dict[str, str] | None = None
    #: remarks that do not make it fail (e.g. the child aborted after its result)
    notes: list[str] = field(default_factory=list)
    #: the keys to_dict() writes, in order: each outcome keeps the JSON shape it had
    #: (a failed or skipped profile has fewer keys than a completed one)
    _keys: tuple[str, ...] = field(default=_PROFILE_KEYS, repr=False, compare=False)

    @classmethod
    def from_child(cls, d: dict) -> "ProfileResult":
        """What a profiling child reported (its JSON object)."""
        d = dict(d)
        d.setdefault("error", None)
        known = set(_PROFILE_KEYS)
        return cls(
            error=d["error"], intra_op=d.get("intra_op"), inter_op=d.get("inter_op"),
            cpu_count=d.get("cpu_count"), load_avg=d.get("load_avg"), model=d.get("model"),
            mode=d.get("mode"), chrome_trace=d.get("chrome_trace"),
            tasks=[Task.from_dict(t) for t in d.get("tasks") or []], sites=d.get("sites"),
            notes=list(d.get("notes") or []), _keys=tuple(k for k in d if k in known))

    @classmethod
    def not_run(cls, error: str, setting: Setting | None = None) -> "ProfileResult":
        """No profiling child ran, or it gave no result (``setting``: the one chosen)."""
        keys = ("chrome_trace", "tasks", "error")
        if setting is None:
            return cls(error=error, _keys=keys)
        return cls(error=error, intra_op=setting[0], inter_op=setting[1],
                   _keys=("intra_op", "inter_op", *keys))

    def to_dict(self, trace: bool = True) -> dict:
        """The JSON object; ``trace=False`` leaves out a recorded Chrome trace."""
        out: dict[str, Any] = {}
        for key in self._keys:
            if key == "tasks":
                out[key] = [t.to_dict() for t in self.tasks]
            elif key == "chrome_trace" and not trace and self.chrome_trace is not None:
                continue
            else:
                out[key] = getattr(self, key)
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass
class MeasureResult:
    """Forked vs serial baseline of one model, one child process per thread setting."""

    #: the model spec that was measured (README: Targets)
    spec: str
    #: the model's name (None: no child got as far as loading it)
    model: str | None
    #: how it was captured: "script" | "trace" | "archive" (None: as for model)
    mode: str | None
    #: torch.__version__ of the measuring process
    torch_version: str
    #: CPUs this process may run on
    cpu_count: int
    #: untimed calls of each variant before the timing
    warmup: int
    #: timed samples of each variant (rounds)
    repeats: int
    #: how the serial version was built, one sentence (None: impossible, see baseline_error)
    baseline: str | None = None
    #: how the serial version was built, in numbers (None: no baseline)
    baseline_info: BaselineInfo | None = None
    #: why no serial baseline could be built (None: there is one, or no child ran)
    baseline_error: str | None = None
    #: serial == forked outputs in every setting that compared them (None: none did)
    outputs_match: bool | None = None
    #: one row per thread setting, in the order asked
    settings: list[SettingResult] = field(default_factory=list)
    #: the setting with the highest speed-up (None: no speed-up was measured)
    best_setting: BestSetting | None = None
    #: the profiled call at the best setting (None: profiling was not asked for)
    profile: ProfileResult | None = None
    #: "measure" (serial and forked timed) or "calibrate" (only the serial baseline, a few
    #: calls per setting: the calibrated prediction without the measurement)
    kind: str = "measure"
    #: a timed sample lasts at least this many seconds (calls back to back)
    min_sample_s: float | None = None

    def take(self, result: dict) -> None:
        """Model facts from a timing child's JSON object (the first child to know wins)."""
        for key in ("model", "mode"):
            if result.get(key) and getattr(self, key) is None:
                setattr(self, key, result[key])
        if result.get("baseline") and self.baseline is None:
            self.baseline = result["baseline"]
            info = result.get("baseline_info")
            self.baseline_info = None if info is None else BaselineInfo.from_dict(info)
        if result.get("baseline_error") and self.baseline_error is None:
            self.baseline_error = result["baseline_error"]

    def to_dict(self, trace: bool = True) -> dict:
        """The JSON object (``"measured"`` in the report); ``trace=False`` leaves out the
        profile's Chrome trace, which the report writes to its own file (``--trace-out``)."""
        out: dict[str, Any] = {
            "spec": self.spec, "model": self.model, "mode": self.mode,
            "torch_version": self.torch_version, "cpu_count": self.cpu_count,
            "warmup": self.warmup, "repeats": self.repeats, "baseline": self.baseline,
            "baseline_info": None if self.baseline_info is None else self.baseline_info.to_dict(),
            "baseline_error": self.baseline_error, "outputs_match": self.outputs_match,
            "settings": [s.to_dict() for s in self.settings],
            "best_setting": None if self.best_setting is None else self.best_setting.to_dict(),
            "kind": self.kind, "min_sample_s": self.min_sample_s,
        }
        if self.profile is not None:
            out["profile"] = self.profile.to_dict(trace)
        return out
