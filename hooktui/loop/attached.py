"""One attacher of an armed process (`hooktui attach PID`), on the connection's thread.

It asks for a step (`open`): the next one, step N, the first whose loss makes `--when`
true (every step is traced, unpaused, until then; the step opens paused where its backward
starts, its forward recorded), or the first with a NaN/Inf (traced with the non-finite
breakpoint; it opens at that firing). Until a step is chosen its firings are kept here and
dropped with it; once chosen, the step's TraceInfo and firings so far are sent, then every
firing as it comes and every change of state. `record` streams the chosen step without a
pause (the attacher writes the file).

The commands that move the model go to the step's Gate. Whatever ends the connection (quit,
the attacher killed, an SSH session gone: the end of the stream) lets the step go on unpaused
to its end, where its hooks come off: the training never waits for an attacher that left.
The console is evaluated here, against the live objects of the firing the step is paused in
(the training thread waits in the gate meanwhile), or the records of a past firing.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import torch

from ..attach import wire
from ..engine.analysis.breakpoints import Breakpoint
from ..engine.analysis.console import evaluate
from ..engine.capture.contain import failure_text
from ..engine.records.records import Event
from ..engine.records.trace_file import event_json, tensor_data
from ..engine.run.armed_step import ArmedStep

SEND_TIMEOUT = 60.0  # seconds a send may wait on an attacher that reads nothing (stopped) before it is let go


class Attachment:
    """`armed`: the process's Armed (loop/arm.py, which makes this: not imported back)."""

    def __init__(self, armed: Any, sock: socket.socket, reader: wire.LineReader) -> None:
        self.armed = armed
        self.sock = sock
        self.reader = reader
        self.request: wire.Open | None = None
        self.step: ArmedStep | None = None
        self.chosen = False
        self.gone = False
        self.names: dict = {}  # what console statements bound
        self._when = None
        self._send_lock = threading.Lock()
        _send_timeout(sock, SEND_TIMEOUT)

    # -- the connection's thread --------------------------------------------------------------
    def serve(self) -> None:
        try:
            self._serve()
        except (OSError, wire.WireError):
            pass
        finally:
            self.let_go()

    def _serve(self) -> None:
        line = self.reader.read()
        request = wire.decode_command(line) if line is not None else None
        if not isinstance(request, wire.Open):
            return
        why = self._refusal(request)
        if why is not None:
            self._send(wire.message_line(wire.Refused(why)))
            return
        self.request = request
        self.armed.attachment = self
        self._send(wire.message_line(wire.Waiting(step=self.armed.steps)))
        while True:
            line = self.reader.read()
            if line is None:
                return  # the attacher is gone
            command = wire.decode_command(line)
            if isinstance(command, wire.Quit):
                return
            self._command(command)

    def _refusal(self, request: wire.Open) -> str | None:
        if not self.armed.armed:
            return "hooktui.arm was disarmed in this process"
        if request.step is not None and request.step < self.armed.steps:
            return f"step {request.step} has begun already (this process is at step {self.armed.steps})"
        if request.when is not None:
            try:
                self._when = compile(request.when, "<--when>", "eval")
            except SyntaxError as exc:
                return f"--when {request.when!r} is not a Python expression: {exc.msg}"
        return None

    def _command(self, command) -> None:
        step = self.step
        if isinstance(command, wire.Eval):
            self._send(wire.message_line(self._evaluate(command)))
            return
        if step is None or not self.chosen:
            return
        if isinstance(command, wire.Breakpoints):
            _apply_breakpoints(step, command)
        elif isinstance(command, wire.Go):
            gate = step.gate
            {"step": gate.step, "step_into": gate.step_into, "continue": gate.resume, "run": gate.run_to_end,
             "finish": lambda: self._finish(step)}[command.how]()

    @staticmethod
    def _finish(step: ArmedStep) -> None:
        current = step.current
        if current is None:
            step.gate.step()
        else:
            step.gate.finish(current.event.module, current.event.call)

    def let_go(self, why: str = "") -> None:
        """The attacher is gone (or told to go): the step runs on unpaused to its end."""
        if self.gone:
            return
        self.gone = True
        if self.armed.attachment is self:
            self.armed.attachment = None
        step = self.step
        if step is not None:
            step.gate.run_to_end()
        if why:
            try:
                self._send(wire.message_line(wire.Bye(why[: wire.TEXT_MAX])), force=True)
            except OSError:
                pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- which step (the training thread) ----------------------------------------------------
    def wants(self, number: int) -> bool:
        request = self.request
        if self.gone or request is None or self.chosen:
            return False
        if request.step is not None and number != request.step:
            if number > request.step:
                self.let_go(f"step {request.step} has begun already (this process is at step {number})")
            return False
        return True

    def prepare(self, step: ArmedStep) -> None:
        request = self.request
        self.step = step
        step.on_event = self._on_event
        step.on_state = self._on_state
        step.on_pause = self._on_pause
        gate = step.gate
        if request.nonfinite:
            gate.breakpoint_list.add(Breakpoint.nonfinite())
        if self._when is not None:
            gate.run_to_end()  # traced, unpaused, until its backward says whether it is the one
            step.on_backward = self._backward_starts
        elif request.nonfinite:
            gate.resume()  # to the first NaN/Inf; a clean step is dropped at its end
        else:
            self._choose(step)

    def _choose(self, step: ArmedStep) -> None:
        """This is the step: the attacher gets its description and its firings so far."""
        self.chosen = True
        gate = step.gate
        if self.request.record:
            gate.run_to_end()
        elif self.request.nonfinite and self._when is not None:
            gate.resume()
        elif not self.request.nonfinite:
            gate.step()
        info = step.info.to_dict()
        try:
            self._send(wire.message_line(wire.Opened(step=step.number, info=info)))
            for event in list(step.events):
                self._send(wire.event_line(event_json(event)))
        except OSError:
            self.let_go()

    def _backward_starts(self, roots: list) -> None:
        step = self.step
        if self.chosen or step is None or self.gone:
            return
        loss = roots[0].detach() if len(roots) == 1 and isinstance(roots[0], torch.Tensor) else None
        scope = {"loss": loss, "step": step.number, "model": self.armed.model, "torch": torch}
        try:
            hit = bool(eval(self._when, {"__builtins__": __builtins__}, scope))
        except Exception as exc:  # the user's expression: the attacher is told, the training goes on
            self.let_go(f"--when {self.request.when!r} raised {type(exc).__name__}: {exc}")
            return
        if hit:
            self._choose(step)

    def _on_event(self, event: Event) -> None:
        if self.chosen and not self.gone:
            try:
                self._send(wire.event_line(event_json(event)))
            except OSError:
                self.let_go()

    def _on_pause(self, event: Event) -> None:
        if self.gone:
            self.step.gate.run_to_end()
            return
        if not self.chosen:
            self._choose(self.step)
            if self.request.record:
                self.step.gate.run_to_end()

    def _on_state(self, state: str) -> None:
        step = self.step
        if state in ("finished", "failed"):
            self.armed.step_ended(step)
            if not self.chosen:  # not the one: dropped, the next step is tried
                self.step = None
                return
        if not self.chosen or self.gone or state == "ready":
            return
        try:
            self._send(wire.message_line(self._state(step, state)))
        except OSError:
            self.let_go()

    def _state(self, step: ArmedStep, state: str) -> wire.State:
        stop = None
        gate_stop = step.gate.stop if state == "paused" else None
        if gate_stop is not None:
            stop = wire.Stop(gate_stop.index, gate_stop.sub, gate_stop.reason[: wire.TEXT_MAX], wire.wire_breakpoint(gate_stop.breakpoint))
        hits = [wire.wire_breakpoint(s.breakpoint, s.enabled, s.hits) for s in step.gate.breakpoint_list.states()]
        return wire.State(state=state, stop=stop, names=list(self._run_names(step)), hits=hits)

    # -- the console ----------------------------------------------------------------------------
    def _run_names(self, step: ArmedStep | None) -> dict:
        names = {"model": self.armed.model}
        if step is not None:
            if step.loss is not None:
                names["loss"] = step.loss
            if step.output is not None and step.state in ("finished", "failed"):
                names["output"] = step.output
            if step.final_grads:
                names["grads"] = dict(step.final_grads)
        return names

    def _evaluate(self, command: wire.Eval) -> wire.Result:
        step = self.step
        event = None
        if step is not None:
            event = next((e for e in reversed(step.events) if e.index == command.index and e.sub == command.sub), None)
        if event is None:
            return wire.Result(id=command.id, expression=command.text[:200], text="no such firing in this step", ok=False)
        current = step.current
        live = current if step.state == "paused" and current is not None and current.event is event else None
        try:
            result = evaluate(command.text, event, live, self.names, run_names=self._run_names(step), past=live is None)
        except Exception as exc:
            return wire.Result(id=command.id, expression=command.text, text=f"hooktui failed: {failure_text(exc)}", ok=False)
        tensor = tensor_data(result.tensor) if result.tensor is not None else None
        return wire.Result(id=command.id, expression=result.expression, text=result.text[: wire.TEXT_MAX], ok=result.ok,
                           output=result.output[: wire.TEXT_MAX + 100], tensor=tensor)

    def _send(self, data: bytes, force: bool = False) -> None:
        if self.gone and not force:
            return
        with self._send_lock:
            wire.send(self.sock, data)


def _apply_breakpoints(step: ArmedStep, command: wire.Breakpoints) -> None:
    wanted = {}
    for item in command.items:
        wanted[wire.breakpoint_of(item)] = item.enabled
    listed = step.gate.breakpoint_list
    for state in listed.states():
        if state.breakpoint not in wanted:
            listed.remove(state.breakpoint)
    for bp, enabled in wanted.items():
        listed.add(bp)
        listed.set_enabled(bp, enabled)
    step.gate.skip_hooks = set(command.skip)
    step.gate.break_on_backward = command.backward


def _send_timeout(sock: socket.socket, seconds: float) -> None:
    import struct

    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(seconds), 0))
    except (OSError, AttributeError, struct.error):
        pass
