"""The screens the workstation opens by name, and the command palette that reaches them and every
action of the screen it was opened over (README, "Keys")."""
from __future__ import annotations

import importlib
from functools import partial

from textual.command import Hit, Hits, Provider

# name -> (module, class, title, key); a screen's module is imported when it is first opened.
SCREENS = {
    "dashboard": ("r2k.app.screens.dashboard", "DashboardScreen", "Dashboard", "D"),
    "queues": ("r2k.app.screens.queues", "QueuePickerScreen", "Validation queues", "V"),
    "registry": ("r2k.app.screens.registry", "RegistryScreen", "Registry", "G"),
    "workitems": ("r2k.app.screens.workitems", "WorkItemsScreen", "Work items", "W"),
    "grey": ("r2k.app.screens.grey", "GreyQueueScreen", "Grey queue", "Y"),
    "conflicts": ("r2k.app.screens.conflicts", "ConflictsScreen", "Conflicts", "C"),
    "adjudication": ("r2k.app.screens.adjudication", "AdjudicationScreen", "Adjudication", "J"),
    "articles": ("r2k.app.screens.articles", "ArticlesScreen", "Articles", "T"),
    "mywork": ("r2k.app.screens.mywork", "MyWorkScreen", "My work", "m"),
}


def screen_class(name: str):
    module, cls, _, _ = SCREENS[name]
    return getattr(importlib.import_module(module), cls)


class ScreensProvider(Provider):
    """The command palette reaches every screen, and every action the screen it was opened over
    can take now (its bindings, hidden ones too; the palette's own screen has none of its own)."""

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        app = self.app
        for name, (_, _, title, _) in SCREENS.items():
            text = f"Open {title}"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(app.open_screen, name), help=f"go to the {title} screen")
        below = self.screen  # the screen the palette was opened over, not the palette itself
        where = getattr(below, "TITLE", None) or below.__class__.__name__
        seen = set()
        for active in below.active_bindings.values():
            binding = active.binding
            if (not active.enabled or not binding.description or "open_screen" in binding.action
                    or binding.action in ("command_palette", "quit") or (active.node, binding.action) in seen):
                continue
            seen.add((active.node, binding.action))
            text = f"{binding.description} ({app.get_key_display(binding)})"
            score = matcher.match(text)
            if score > 0:
                yield Hit(score, matcher.highlight(text), partial(app.run_action, binding.action, active.node),
                          help=f"on {where}")
