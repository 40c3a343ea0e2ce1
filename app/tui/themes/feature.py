"""The theme: applied from config.toml at start-up, and written back there when the person picks
another one in the palette (Ctrl+P → theme), so it is still theirs next time."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.app import App
    from textual.theme import Theme

    from ..shell import Shell


class Themes:
    """Handed the Textual App itself: the theme is Textual's (`theme`, `available_themes`, its signal)."""

    def __init__(self, shell: Shell, app: App[int]) -> None:
        self.shell, self.app = shell, app
        self._saved: str | None = None

    def apply_saved(self) -> None:
        """The configured theme (an unknown name is one warning and the default stays); from
        then on every theme change is saved."""
        app = self.app
        name = self.shell.chat.settings.theme
        if name and name in app.available_themes:
            app.theme = name
        elif name:
            self.shell.notify(f"Unknown theme {name!r} in config.toml; using {app.theme}. Ctrl+P → theme lists them.",
                              severity="warning", timeout=8)
        self._saved = app.theme if not name or name in app.available_themes else name
        app.theme_changed_signal.subscribe(app, self._changed)

    def _changed(self, theme: Theme) -> None:
        if theme.name == self._saved:
            return  # the start-up theme, or one already saved
        from treechat.config.settings import ConfigError
        from treechat.config.write import write_setting

        settings = self.shell.chat.settings
        try:
            write_setting(settings.config_file, "theme", theme.name)
        except ConfigError as err:
            self.shell.notify(f"The theme is in use but not saved: {err}", severity="warning", timeout=8)
            return
        self._saved = settings.theme = theme.name
