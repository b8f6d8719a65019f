"""How many warnings Python keeps for good, in the modules' ``__warningregistry__``."""

from __future__ import annotations

import sys


def registered_warnings() -> int:
    """The warnings kept in every loaded module's ``__warningregistry__``, read from the
    module's own namespace (a module such as ``torch.ops`` answers any attribute)."""
    return sum(len(registry) for module in list(sys.modules.values())
               if isinstance(registry := getattr(module, "__dict__", {}).get(
                   "__warningregistry__"), dict))
