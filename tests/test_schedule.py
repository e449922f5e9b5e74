"""The scheduling simulation, the static intra-op model and the predictions built on them."""
from __future__ import annotations

import pytest
import torch

from irviz import api
from irviz.analyses.intraop import GRAIN_SIZE, op_speed, usable_threads
from irviz.analyses.prediction import build_program, calibrated_times, predict, static_times
from irviz.analyses.schedule import MAIN, Fork, Run, Wait, serial_us, simulate, speedup
from conftest import SAMPLES


# -- the simulation on hand-built task DAGs with known answers --------------------------

def two_tasks(us=100.0, cores=1.0):
    return {MAIN: [Fork("a"), Fork("b"), Wait("a"), Wait("b")],
            "a": [Run(us, cores)], "b": [Run(us, cores)]}


def test_two_equal_tasks_need_two_pool_threads():
    assert simulate(two_tasks(), interop=1, cpus=2).makespan_us == pytest.approx(200)
    assert simulate(two_tasks(), interop=2, cpus=2).makespan_us == pytest.approx(100)
    assert simulate(two_tasks(), interop=4, cpus=2).makespan_us == pytest.approx(100)


def test_more_pool_threads_than_cores_share_the_cores():
    assert simulate(two_tasks(), interop=2, cpus=1).makespan_us == pytest.approx(200)
    three = {MAIN: [Fork("a"), Fork("b"), Fork("c"), Wait("a"), Wait("b"), Wait("c")],
             **{t: [Run(100)] for t in "abc"}}
    assert simulate(three, interop=3, cpus=2).makespan_us == pytest.approx(150)


def test_intra_op_threads_take_cores():
    # each task's op keeps two cores busy: two of them on two cores run at half speed
    assert simulate(two_tasks(cores=2), interop=2, cpus=2).makespan_us == pytest.approx(200)
    assert simulate(two_tasks(cores=1.5), interop=2, cpus=2).makespan_us == pytest.approx(150)
    assert simulate(two_tasks(cores=2), interop=2, cpus=4).makespan_us == pytest.approx(100)


def test_a_nested_wait_frees_its_pool_thread():
    # one pool thread: A forks B and waits for it; if A's wait held the thread, B could
    # never run (deadlock). It suspends A, B runs, then A's continuation.
    program = {MAIN: [Fork("A"), Wait("A")],
               "A": [Run(10), Fork("B"), Run(20), Wait("B"), Run(5)],
               "B": [Run(100)]}
    schedule = simulate(program, interop=1, cpus=2)
    assert schedule.makespan_us == pytest.approx(10 + 20 + 100 + 5)
    threads = {(s.task, s.thread) for s in schedule.segments}
    assert ("B", "pool 0") in threads and ("A", "pool 0") in threads


def test_the_blocked_caller_takes_no_pool_work():
    # the caller waits for A while B is queued behind it on the one pool thread
    program = {MAIN: [Fork("A"), Fork("B"), Wait("A"), Wait("B")],
               "A": [Run(100)], "B": [Run(100)]}
    assert simulate(program, interop=1, cpus=2).makespan_us == pytest.approx(200)


def test_the_caller_works_beside_its_task():
    program = {MAIN: [Fork("A"), Run(100), Wait("A")], "A": [Run(60)]}
    assert simulate(program, interop=1, cpus=2).makespan_us == pytest.approx(100)
    assert speedup(program, 1, 2) == pytest.approx(160 / 100)


def bifork(members=4, caller_us=100.0):
    program = {MAIN: []}
    for i in range(members):
        program[MAIN] += [Fork(f"f{i}"), Run(caller_us), Wait(f"f{i}")]
        program[f"f{i}"] = [Run(100)]
    return program


def test_a_lost_race_moves_the_caller_to_the_pool():
    # equal halves: the caller's wait loses the race, its frame goes on on the one pool
    # thread, and every later fork queues behind it: 1 member in parallel, 3 serial
    assert speedup(bifork(), 1, 2) == pytest.approx(8 / 7)
    assert speedup(bifork(), 2, 2) == pytest.approx(2.0)
    # a caller clearly slower than its task always finds the task done
    assert speedup(bifork(caller_us=130), 1, 2) == pytest.approx(4 * 230 / (4 * 130))
    assert speedup(bifork(), 1, 2, serial=800) == pytest.approx(8 / 7)
    assert serial_us(bifork()) == 800


def test_waking_a_pool_thread_takes_time_but_no_core():
    # each task starts 10 us after it was queued; the caller waits for a, its frame goes
    # on on the pool (another 10 us), b is done by then, and the caller returns 10 us later
    schedule = simulate(two_tasks(), interop=2, cpus=2, wake_us=10)
    assert schedule.makespan_us == pytest.approx(10 + 100 + 10 + 10)
    # the wake-ups take no core: on one core the two tasks still take 200 us of it
    assert simulate(two_tasks(), interop=2, cpus=1, wake_us=20).makespan_us == \
        pytest.approx(20 + 200 + 20 + 20)


def test_a_thread_that_just_ended_its_work_takes_the_next_frame_without_waking():
    # two tasks and one pool thread: a is woken (10 us); b queued behind a starts the
    # instant a ends, and so does the caller's continuation queued when b ends
    program = {MAIN: [Fork("a"), Fork("b"), Wait("a"), Wait("b")],
               "a": [Run(100)], "b": [Run(100)]}
    cold = simulate(program, interop=1, cpus=2, wake_us=10).makespan_us
    warm = simulate(program, interop=1, cpus=2, wake_us=10, warm_us=0).makespan_us
    assert warm == pytest.approx(10 + 100 + 100 + 10)   # wake a, a, b, return to caller
    assert cold == pytest.approx(warm + 10 + 10)         # b and the continuation woken too


def test_a_wait_on_a_task_never_forked_is_an_error():
    with pytest.raises(ValueError, match="cannot finish"):
        simulate({MAIN: [Run(10), Wait("x")], "x": [Run(1)]}, 1, 2)


# -- the static intra-op model: op sizes around the grain size --------------------------

class Sizes(torch.nn.Module):
    def forward(self, a, b, c):
        return torch.tanh(a), torch.tanh(b), torch.tanh(c)


class Rnn(torch.nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.lstm = torch.nn.LSTM(channels, channels)

    def forward(self, x):
        return self.lstm(x)[0]


def _by_size(view):
    G = view.graph
    return {G.nodes[n]["outputs"][0]["shape"][0]: n for n in G
            if G.nodes[n]["kind"] == "aten::tanh"}


def test_ops_split_only_above_the_grain_size():
    view = api.visualize(Sizes(), inputs=(torch.rand(GRAIN_SIZE), torch.rand(GRAIN_SIZE + 1),
                                          torch.rand(4 * GRAIN_SIZE)), mode="trace")[0]
    nodes = _by_size(view)
    G = view.graph
    assert usable_threads(G, nodes[GRAIN_SIZE], 2) == 1
    assert usable_threads(G, nodes[GRAIN_SIZE + 1], 2) == 2
    assert usable_threads(G, nodes[4 * GRAIN_SIZE], 2) == 2
    assert usable_threads(G, nodes[4 * GRAIN_SIZE], 8) == 4
    assert usable_threads(G, nodes[4 * GRAIN_SIZE], 1) == 1
    times = static_times(G, 2)
    assert times.cores[nodes[GRAIN_SIZE]] == 1.0 and times.cores[nodes[GRAIN_SIZE + 1]] == 2.0
    assert op_speed(1) == 1.0 and 1.0 < op_speed(2) < 2.0


def test_an_lstm_splits_its_time_step_not_its_sequence():
    # T x B x C = 50 x 50 x 64: 12,800 gate elements per step (below the grain), although
    # the whole input has 160,000 elements; at C = 256 a step has 51,200 (above)
    for channels, threads in ((64, 1), (256, 2)):
        view = api.visualize(Rnn(channels), inputs=torch.rand(50, 50, channels))[0]
        G = view.graph
        [lstm] = [n for n in G if G.nodes[n]["kind"] == "aten::lstm"]
        assert usable_threads(G, lstm, 2) == threads


# -- predictions on the seed ensembles (static costs, the simulated schedule) -----------

def seed(cls, channels):
    torch.manual_seed(0)
    return api.visualize(f"{SAMPLES / 'lstm_ensemble.py'}:{cls}(channels={channels})",
                         inputs=f"torch.rand(10, 8, {channels})")[0].graph


def test_the_ensemble_program_has_one_instance_per_member_and_lstm():
    G = seed("LSTMEnsemble", 16)
    program = build_program(G, static_times(G, 1))
    assert len(program) == 1 + 4 + 4          # the caller, 4 members, 4 forward LSTMs
    waits = [s for s in program[MAIN] if isinstance(s, Wait)]
    assert len(waits) == 4                    # the wait loop waits every member


def test_static_predictions_follow_the_schedule():
    ens, bi = seed("LSTMEnsemble", 16), seed("BiForkLSTMEnsemble", 16)
    # one pool thread: the blocked caller leaves the members to run one after another
    assert predict(ens, 1, 1, 2, wake_us=0).speedup == pytest.approx(1.0, abs=0.05)
    assert predict(ens, 1, 2, 2, wake_us=0).speedup > 1.8
    # BiFork with one pool thread: the lost race serializes the later members
    assert predict(bi, 1, 1, 2, wake_us=0).speedup < 1.3
    assert predict(bi, 1, 2, 2, wake_us=0).speedup > 1.8
    # tasks of a few hundred microseconds: waking the pool threads eats the gain
    assert predict(ens, 1, 2, 2, wake_us=100).speedup < \
        predict(ens, 1, 2, 2, wake_us=0).speedup - 0.3


def test_calibration_scales_to_the_measured_serial_time_and_cpu():
    G = seed("LSTMEnsemble", 16)
    # a measured serial run of 80 ms using 1.9 CPUs: the ops fill both cores
    times = calibrated_times(G, 2, serial_wall_s=0.080, serial_cpu_s=0.152)
    program = build_program(G, times)
    assert serial_us(program) == pytest.approx(80_000, rel=1e-6)
    busy = predict(G, 2, 2, 2, times=times, basis="calibrated")
    idle = predict(G, 2, 2, 2, times=calibrated_times(G, 2, 0.080, 0.080),
                   basis="calibrated")
    assert busy.speedup < 1.15 < 1.8 < idle.speedup


def test_the_hand_off_cost_is_fitted_back_from_a_simulated_probe():
    """A probe that ran as the simulation with a 400 us start cost says: 400 us; one that
    ran as fast as the ideal says 0; no probe, no figure."""
    from irviz.analyses.prediction import _handoff_program, fit_wake_us

    program = _handoff_program(4, 2_500.0)
    for inter, cpus in ((2, 2.0), (4, 1.7)):
        took = simulate(program, inter, cpus, wake_us=400.0, warm_us=0.0).makespan_us
        probe = {"pairs": 4, "serial_s": 0.020, "forked_s": took / 1e6}
        assert fit_wake_us(probe, inter, cpus) == pytest.approx(400.0, abs=1.0)
    ideal = simulate(program, 2, 2.0).makespan_us
    assert fit_wake_us({"pairs": 4, "serial_s": 0.020, "forked_s": ideal / 1e6 * 0.9},
                       2, 2.0) == 0.0
    assert fit_wake_us(None, 2, 2.0) is None
    assert fit_wake_us({"pairs": 4, "serial_s": 0.020, "forked_s": 0.0}, 2, 2.0) is None


def test_a_costly_hand_off_lowers_the_calibrated_prediction():
    from irviz.analyses.prediction import Calibration, calibrated

    G = seed("BiForkLSTMEnsemble", 16)
    cheap = {"pairs": 4, "serial_s": 0.020, "forked_s": 0.0102}
    dear = {"pairs": 4, "serial_s": 0.020, "forked_s": 0.016}
    fast, w0, _ = calibrated(G, 1, 2, 2, Calibration(0.020, 0.020, handoff=cheap))
    slow, w1, _ = calibrated(G, 1, 2, 2, Calibration(0.020, 0.020, handoff=dear))
    assert w0 < 100 < 500 < w1
    assert slow.speedup < fast.speedup - 0.2


def test_pool_threads_run_at_their_measured_speed():
    """A pool twice as fast as the caller halves the tasks' time, not the caller's."""
    program = {MAIN: [Fork("a"), Run(100), Wait("a")], "a": [Run(100)]}
    assert simulate(program, 1, 2).makespan_us == pytest.approx(100)
    assert simulate(program, 1, 2, pool_speed=2.0).makespan_us == pytest.approx(100)
    assert simulate(two_tasks(), 2, 2, pool_speed=2.0).makespan_us == pytest.approx(50)
    assert simulate(two_tasks(), 2, 2, pool_speed=0.5).makespan_us == pytest.approx(200)
    with pytest.raises(ValueError):
        simulate(two_tasks(), 2, 2, pool_speed=0.0)


def test_the_pool_speed_is_fitted_to_the_pool_pair():
    """Two 10 ms copies forked onto two pool threads on two cores: 10 ms together is the
    caller's speed, 5 ms twice it; one pool thread runs them one after another."""
    from irviz.analyses.prediction import pool_speed

    assert pool_speed(0.010, 0.010, 0.010, 2, 2) == 1.0
    assert pool_speed(0.010, 0.0102, 0.010, 2, 2) == 1.0     # within the medians' noise
    assert pool_speed(0.010, 0.005, 0.010, 2, 2) == pytest.approx(2.0, rel=1e-3)
    assert pool_speed(0.010, 0.010, 0.010, 1, 2) == pytest.approx(2.0, rel=1e-3)
    assert pool_speed(0.010, 0.001, 0.010, 2, 2) == pytest.approx(3.0)    # at most 3
    # slower than the simulation: the copies slowed each other, the pair's cores say so
    assert pool_speed(0.010, 0.020, 0.010, 2, 2) == 1.0
    assert pool_speed(0.010, None, 0.010, 2, 2) == 1.0
    # ops on two cores each: two copies at once share them, which is not slowness
    assert pool_speed(0.010, 0.020, 0.020, 2, 2) == 1.0


def test_the_pair_probe_cores_account_for_the_pool_speed():
    """Two copies that took 2x one copy's time shared one core; with a pool twice as fast,
    the same 2x says less than one core was left (the pool copy needed half the work)."""
    from irviz.analyses.prediction import pair_cpus

    assert pair_cpus(2, 0.010, 0.010, 0.010) == 2.0          # no slow-down: both cores
    assert pair_cpus(2, 0.010, 0.010, 0.020) == pytest.approx(1.0, abs=1e-3)
    assert pair_cpus(2, 0.010, 0.010, 0.015, speed=2.0) == pytest.approx(1.0, abs=1e-3)
    assert pair_cpus(2, 0.010, 0.010, None) is None


def test_a_faster_pool_raises_the_calibrated_prediction():
    """LSTMEnsemble runs its members on the pool: two copies forked at once took 40 ms
    (the caller's speed) or 20 ms (twice it): predicted faster."""
    from irviz.analyses.prediction import Calibration, calibrated

    G = seed("LSTMEnsemble", 16)
    same, _, s1 = calibrated(G, 2, 2, 2, Calibration(0.040, 0.040, wake_us=0.0,
                                                    pool_pair_s=0.040))
    fast, _, s2 = calibrated(G, 2, 2, 2, Calibration(0.040, 0.040, wake_us=0.0,
                                                    pool_pair_s=0.020))
    assert (s1, s2) == (1.0, pytest.approx(2.0, rel=1e-3))
    assert fast.speedup > same.speedup * 1.6
