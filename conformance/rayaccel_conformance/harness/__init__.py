"""What runs a plugin under the suite: the :mod:`.subject` being graded, the :mod:`.guard` that watches each
of its hook calls (with the :mod:`.audit` hook that sees I/O around the Host seam), and the run's shared Ray
cluster (:mod:`.raycluster`)."""
