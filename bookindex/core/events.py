"""The progress-callback type shared by builds, compiles and the Engine: (event name, fields)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Events = Callable[[str, dict[str, Any]], None]
