"""Day-zero SKU onboarding: a new SKU as catalog data and a simulated fixture, checked before it is written."""
