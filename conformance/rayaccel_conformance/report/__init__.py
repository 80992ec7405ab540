"""What a run produces: the tier reached (:mod:`.tiers`), the report :mod:`.document` (JSON and HTML, its
schema beside it), the graded :mod:`.builds`, and the signed in-toto :mod:`.attestation` (:mod:`.signing`)."""
