"""The theme: applied from config.toml at start-up, and written back there when the person picks
another one in the palette (Ctrl+P → theme), so it is still theirs next time."""

from __future__ import annotations

from textual.theme import Theme

from .base import TuiBase


class ThemeSettings(TuiBase):
    _saved_theme: str | None = None

    def apply_saved_theme(self) -> None:
        """The configured theme (an unknown name is one warning and the default stays); from
        then on every theme change is saved."""
        name = self.chat.settings.theme
        if name and name in self.available_themes:
            self.theme = name
        elif name:
            self.notify(f"Unknown theme {name!r} in config.toml; using {self.theme}. Ctrl+P → theme lists them.",
                        severity="warning", timeout=8)
        self._saved_theme = self.theme if not name or name in self.available_themes else name
        self.theme_changed_signal.subscribe(self, self._theme_changed)

    def _theme_changed(self, theme: Theme) -> None:
        if theme.name == self._saved_theme:
            return  # the start-up theme, or one already saved
        from treechat.config.settings import ConfigError
        from treechat.config.write import write_setting

        try:
            write_setting(self.chat.settings.config_file, "theme", theme.name)
        except ConfigError as err:
            self.notify(f"The theme is in use but not saved: {err}", severity="warning", timeout=8)
            return
        self._saved_theme = self.chat.settings.theme = theme.name
