"""The Host seam and its implementations, below the plugins: the protocol every plugin reads the machine through
and the real host (:mod:`.seam`), the simulated host over a fixture in vendor-native formats (:mod:`.simulated`,
:mod:`.fixtures`, :mod:`.expectations`), and the recording host that makes such fixtures on real hardware
(:mod:`.recording`, :mod:`.call_log`, :mod:`.recorded_fixture`, :mod:`.anonymize`). Which host a run reads is
chosen at the edge (:mod:`rayaccel.simulation.host_factory`), never in the inventory."""
