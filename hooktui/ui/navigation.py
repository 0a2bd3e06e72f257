"""Moving through firings: step, continue, back, finish, step into, jump. Mixed into HooktuiApp.

The history holds the firings seen so far; stepping past its end asks the source (a live
model) for the next one. These actions only move the cursor or ask the source: rendering
is the app's. Plain methods only: Textual collects `@on` handlers from App
subclasses, not from a mixin.
"""

from __future__ import annotations

from ..engine.records.records import Event, firing_number, position_of


class NavigationActions:
    def goto(self, position: int, follow: bool | None = None, burst: bool = False) -> None:
        """Move to `position` and draw it; `burst` (a key that may come held down): drawn
        after the keys already queued have moved on (`_render_later`)."""
        history = self.history
        history.move(position)
        if follow is not None:
            history.follow = follow and history.at_latest
        if burst:
            self._render_later()
        else:
            self._render_current()

    # Keys that say why when they cannot act (a disabled binding would do nothing, silently).
    EXPLAINED = ("jump", "show_error", "restart")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.EXPLAINED:
            return True
        return self.available(action)

    def available(self, action: str) -> bool | None:
        """True when `action` can act now; None greys it out (footer, command palette)."""
        history = self.history
        if action in ("step", "resume", "step_into"):
            return True if (not history.at_latest or self.source.can_advance) else None
        if action == "finish":
            event = history.current
            return True if event is not None and (self._backward_ahead(event) is not None or self.source.can_advance) else None
        if action == "jump":
            event = history.current
            back = self._jumped_from is not None and self._jumped_from[1] == history.cursor
            return True if back or (event is not None and event.forward_index is not None) else None
        if action in ("search_next", "search_previous") and self.search is not None:
            return True  # a match to go to, or "no match" to say
        if action == "search_next":
            return self.available("step")
        if action == "search_previous":
            return self.available("back")
        if action in ("back", "first"):
            return True if history.next_visible(history.cursor, -1) is not None else None
        if action == "latest":
            return True if not history.at_latest else None
        if action == "show_error":
            return True if history.error is not None else None
        if action in ("slice", "outer_slice"):
            return True if self.is_mounted and self.lower.slices > 1 else None
        return True

    def action_step(self) -> None:
        history = self.history
        if not history.at_latest:
            position = history.next_visible(history.cursor, 1)
            self.goto(position if position is not None else history.latest, follow=True, burst=True)
            return
        if not self.source.can_advance:
            return
        history.follow = True
        if self._stepping or self.source.state == "running":
            if self._stepping:
                self._queued_steps += 1
            else:  # running freely (continue): pause at the next firing
                self._stepping = True
                self.source.step()
            return
        self._stepping = True
        self.source.step()

    def action_resume(self) -> None:
        history = self.history
        if not history.at_latest:
            found = history.find_stop(self.source.breakpoint_list, self.source.break_on_backward, count=self.source.live)
            if found is not None:
                position, stop = found
                if stop is not None:
                    self.stops[stop.key] = stop
                else:  # B's break: the first backward firing
                    self.backward_stops.add(history.events[position].key)
                self.goto(position, follow=False)
                return
            self.goto(history.latest, follow=True)
        if self.source.can_advance:
            history.follow = True
            self._queued_steps = 0
            self._stepping = False
            self.source.resume()

    def action_back(self) -> None:
        position = self.history.next_visible(self.history.cursor, -1)
        if position is not None:
            self.goto(position, follow=False, burst=True)

    def action_first(self) -> None:
        position = 0 if self.history.visible(0) else self.history.next_visible(0, 1)
        if self.history.events and position is not None:
            self.goto(position, follow=False)

    # -- autograd nodes, finish, forward <-> backward ---------------------------------------
    def _at_live_pause(self) -> bool:
        """The cursor is on the firing the model is paused in."""
        return self.source.live and self.source.state == "paused" and self.history.cursor == len(self.history) - 1

    def action_step_into(self) -> None:
        event = self.current
        if event is None or event.hook != "backward_pre" or not self._at_live_pause() or self._stepping:
            self.action_step()
            return
        self.history.follow = True
        self._stepping = True
        self.source.step_into()

    def _backward_ahead(self, event: Event) -> int | None:
        """Position of the backward firing of `event`'s module call, if known, after the cursor."""
        history = self.history
        for position in range(history.cursor + 1, len(history)):
            other = history.events[position]
            if other.hook == "backward" and other.module == event.module and other.call == event.call:
                return position
        return None

    def _backward_before(self, event: Event) -> int | None:
        for position in range(self.history.cursor, -1, -1):
            other = self.history.events[position]
            if other.hook == "backward" and other.module == event.module and other.call == event.call:
                return position
        return None

    def action_finish(self) -> None:
        event = self.current
        if event is None:
            return
        ahead = self._backward_ahead(event)
        if ahead is not None:
            self.goto(ahead, follow=False)
            return
        who = f"{event.module or '(root)'} call {event.call}"
        if event.phase == "backward" and event.hook != "backward_pre":
            before = self._backward_before(event)
            if before is not None:  # e.g. fired early: finishing would run to the end
                self.notify(f"the backward hook of {who} already fired, at #{before}", title="finish", markup=False)
                return
        if not self._at_live_pause() or self._stepping:
            self.notify(f"no backward firing of {who} ahead", title="finish", markup=False)
            return
        self.history.follow = True
        self._stepping = True
        self.source.finish()

    def action_jump(self) -> None:
        history = self.history
        if self._jumped_from is not None and self._jumped_from[1] == history.cursor:
            origin = self._jumped_from[0]
            self._jumped_from = None
            self.goto(origin, follow=origin >= history.latest)
            return
        event = self.current
        if event is None:
            return
        if event.forward_index is None:
            why = "a forward firing has no other side to jump to" if event.phase == "forward" else "this firing has no forward firing"
            self.notify(f"j jumps from a backward firing to its forward firing and back: {why}", title="jump", markup=False)
            return
        forward = position_of(history.events, event.forward_index)
        if forward is None:
            self.notify(f"j: forward firing #{event.forward_index} is not in this run", title="jump", markup=False)
            return
        self._jumped_from = (history.cursor, forward)
        self.goto(forward, follow=False)

    def go_to_index(self, number: tuple[int, int] | int) -> None:
        """Move to the firing numbered `number` ((index, sub), or a plain index), or say why not."""
        index, sub = (number, 0) if isinstance(number, int) else number
        history = self.history
        name = firing_number(index, sub)
        position = position_of(history.events, index, sub)
        if position is None:
            last = history.latest
            latest = history.events[last].key if history.events else None
            if latest is not None and (index, sub) < latest:
                why = (f"#{name} is not in this run (a legacy firing left out of the trace)" if not sub
                       else f"#{name} is not in this run (N.k numbers the firings stepped into with s after #N)")
            elif self.source.can_advance:
                why = f"#{name} has not fired yet" + ("" if latest is None else f" (latest #{firing_number(*latest)})")
                why += ": c or n runs on"
            else:  # the run is over (or a recorded trace): nothing more will fire
                why = f"#{name} is not in this run" + ("" if latest is None else f": its last firing is #{firing_number(*latest)}")
            self.notify(why, title="go to", markup=False)
            return
        if not history.visible(position):
            self.notify(f"#{name} is a legacy firing, hidden: L shows them", title="go to", markup=False)
            return
        self.goto(position, follow=position >= history.latest)

    def action_latest(self) -> None:
        self.goto(self.history.latest, follow=True)
