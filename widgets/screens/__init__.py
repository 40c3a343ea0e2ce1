"""The modal screens; each ends with ``dismiss(result)`` (see each class for what it returns)."""

from .dialogs import ConfirmDialog, LabelDialog
from .help import HelpScreen
from .model_picker import ModelChoice, ModelGroup, ModelPicker
from .search import SearchScreen
from .sessions import SessionsScreen
from .text_view import TextDialog
from .thinking_picker import ThinkingPicker
from .tools import ToolsDialog

__all__ = ["ConfirmDialog", "HelpScreen", "LabelDialog", "ModelChoice", "ModelGroup", "ModelPicker", "SearchScreen",
           "SessionsScreen", "TextDialog", "ThinkingPicker", "ToolsDialog"]
