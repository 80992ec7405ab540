"""hostile-import-hang: never finishes being imported (an hour's sleep at import, as a vendor library waiting
on a device that does not answer)."""

import time

time.sleep(3600)
