"""The footer's keys, greyed out in place when only their availability changes.

Textual's Footer recomposes every key whenever the screen's bindings are refreshed: each
key widget is removed, made again and styled. The app refreshes them when a key becomes
available or unavailable (`f` has no backward firing ahead at a `backward` firing, `N`
none behind at the first), which happens at most steps through a backward: that recompose
was most of a step's key-to-screen time on the 1,000-module benchmark (benchmarks/ui_step.py).
Here, when the keys to show are the same ones (same key, action, text and tooltip, in the
same order) and only which are enabled differs, each key's disabled state is set in place,
as the recompose would have made it (FooterKey's `_disabled` and its `-disabled` class);
anything else recomposes as Textual's does.

This reaches past Textual's public API (FooterKey lives in `textual.widgets._footer`; its
`_disabled`, and Footer's `_bindings_ready`, which `bindings_changed` sets as Footer's own
does; checked on Textual 8.2.8). tests/ui/test_ui_footer_keys.py checks every key's state
against the screen's bindings after each step, so a Textual release that changes them fails
there rather than showing a wrong footer.
"""

from __future__ import annotations

from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeysFooter(Footer):
    def bindings_changed(self, screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self._update_keys)

    async def _update_keys(self) -> None:
        wanted = self._wanted()
        keys = list(self.query(FooterKey))
        if wanted is None or len(keys) != len(wanted) or any(
            (key.key, key.action, key.description, key.tooltip) != shown for key, (shown, _) in zip(keys, wanted)
        ):
            await self.recompose()
            return
        for key, (_, enabled) in zip(keys, wanted):
            if key._disabled == enabled:
                key._disabled = not enabled
                key.set_class(not enabled, "-disabled")

    def _wanted(self) -> list[tuple[tuple, bool]] | None:
        """((key, action, description, tooltip), enabled) of each key Footer.compose would
        make, in its order; None where compose would group keys (not done in place)."""
        active = self.screen.active_bindings
        first: dict[str, tuple] = {}
        for _, binding, enabled, tooltip in active.values():
            if not binding.show:
                continue
            if binding.group is not None:
                return None
            first.setdefault(binding.action, (binding, enabled, tooltip))
        wanted = [((binding.key, binding.action, binding.description, tooltip or None), enabled)
                  for binding, enabled, tooltip in first.values()]
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                _, binding, enabled, tooltip = found
                wanted.append(((binding.key, binding.action, binding.description, binding.tooltip or binding.description or None),
                               enabled))
        return wanted
