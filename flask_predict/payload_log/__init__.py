"""The payload log: a sample of what models were asked and what they answered, per model or
server-wide, written off the request path to a file, standard output or a CloudEvents
receiver (``docs/payload-logging.md``).

:class:`PayloadLog` (:mod:`.log`) samples and queues; :mod:`flask_predict.settings.payload_log` reads the keys and
each model's entry; :mod:`.kept` holds a sampled request's bodies and renders them;
:mod:`.entry` is the record; :mod:`.sinks` and :mod:`.cloudevents` write it.
"""

from ..request.transport import NOT_KEPT, Body, Kept
from .kept import KeptBytes, KeptStream, render_bytes
from .log import OUTCOMES, PayloadLog
from ..settings.payload_log import DEFAULTS, PayloadSettings, Policy
from ..settings.payload_log import read as read_settings

__all__ = ["NOT_KEPT", "Body", "DEFAULTS", "Kept", "KeptBytes", "KeptStream", "OUTCOMES",
           "PayloadLog", "PayloadSettings", "Policy", "read_settings", "render_bytes"]
