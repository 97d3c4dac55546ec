"""The author kit: what integration authors build on (egress policy, bounded HTTP, ...).

Import the modules themselves (``ragloom.core.kit.egress``); this package imports nothing.
"""

__all__: list[str] = []
