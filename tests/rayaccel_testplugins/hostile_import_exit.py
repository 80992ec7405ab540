"""hostile-import-exit: ends the process that imports it (os._exit at import), before declaring anything."""

import os

os._exit(9)
