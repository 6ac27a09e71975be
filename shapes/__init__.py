"""When load is offered: the four phases, a constant rate, the capacity sweep."""
