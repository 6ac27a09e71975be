"""The platforms the kit ships to test against (reference, agno, LangGraph), each started by its
own launcher, some in environments of their own; importing this package imports none of them."""
