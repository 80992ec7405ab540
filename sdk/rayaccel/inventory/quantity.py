"""Request-quantity rules: whether a task may ask for a quantity of a family's resource."""

from __future__ import annotations

from rayaccel.records import QuantityRule


def check_quantity(rule: QuantityRule, resource_name: str, quantity: float) -> tuple[bool, str | None]:
    """(valid, message) in the shape Ray's ``validate_resource_request_quantity`` returns."""
    whole = float(quantity).is_integer()
    if rule.kind == "fractional":
        if quantity > 1 and not whole:
            return False, (f"{resource_name} resource quantity must be whole numbers above 1; "
                           f"{quantity:g} was requested (use 1, 2, 3, ... or a fraction up to 1)")
        return True, None
    if rule.kind == "whole":
        if not whole:
            return False, (f"{resource_name} resource quantity must be a whole number; {quantity:g} was "
                           f"requested (fractions of a {resource_name} cannot be shared)")
        return True, None
    if quantity not in rule.choices:
        allowed = ", ".join(str(c) for c in rule.choices)
        return False, (f"{resource_name} resource quantity must be one of {allowed}; {quantity:g} was requested")
    return True, None
