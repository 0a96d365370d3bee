"""Hypothesis settings shared by the tests of algorithms/.

Compilation happens on the first call per dtype, so there is no deadline; the
example counts keep the whole directory to a few minutes on two cores.
"""
from hypothesis import HealthCheck, settings

settings.register_profile(
    "algorithms",
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
