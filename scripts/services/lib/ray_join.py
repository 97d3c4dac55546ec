"""``ray start --address ...`` for a worker node joining a loopback-only (127.0.0.1) head.

In loopback mode (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, which keeps ``127.0.0.1`` as
the node address instead of resolving it to the host's routable one) Ray's CLI refuses
to start a worker node. This runs the same CLI in cluster mode with ``127.0.0.1`` kept as
given, and starts the node's processes in loopback mode: every server binds 127.0.0.1.
"""

import os
import sys

os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "1"  # read once, at import: allows joining

import ray._private.services as services
from ray.scripts.scripts import main

services.resolve_ip_for_localhost = lambda host: host  # keep 127.0.0.1 (not the host's IP)
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # the node's processes: loopback

sys.exit(main())  # type: ignore[no-untyped-call]  # Ray's click CLI is unannotated
